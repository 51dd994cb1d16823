"""JUnit XML and JSON reports: the shape CI systems read, consistent counts, no secrets."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET  # parses only our own report
from collections.abc import Callable

import httpx

from walletctl.errors import GatewayError
from walletctl.masking import Masker
from walletctl.ops.smoke import (
    RunContext,
    Scenario,
    ScenarioRun,
    SmokeReport,
    Step,
    StepSkipped,
    check_equal,
    run_scenarios,
)
from walletctl.ops.smoke.report import to_data, to_json, to_junit
from walletctl.ops.smoke.target import ExchangeLog

SECRET = "junit-secret-Wk3v"
CRYPTOGRAM = "AgAAAAAAAIR8CQrXcIhbQAAAAAA="


def _exchange(run: ScenarioRun, status: int, body: dict[str, object]) -> None:
    log: ExchangeLog = run.ctx.exchanges  # type: ignore[assignment]
    request = httpx.Request(
        "POST", "http://gw.example/api/v5/apmTransactions",
        json={"amount": "41.00", "cryptogram": CRYPTOGRAM, "note": f"key={SECRET}"},
        headers={"Authorization": f"PublicApiKey {SECRET}"},
    )
    log.record(request, status, 0.012, json.dumps(body).encode(), "application/json")


def build_report() -> tuple[SmokeReport, Masker]:
    def passed(run: ScenarioRun) -> str:
        run.ref("auth", "preauth checkout")
        return "approved"

    def refused(run: ScenarioRun) -> str:
        run.ref("cap1")
        _exchange(run, 422, {"code": "TRX-422", "description": "BusinessRuleViolation",
                             "details": {"message": f"refused, apiKey {SECRET}"}})
        raise GatewayError(422, description="BusinessRuleViolation", detail="capture refused")

    def wrong(run: ScenarioRun) -> str:
        check_equal("Declined", "Approved", f"state (key {SECRET})")
        return ""

    def boom(run: ScenarioRun) -> str:
        raise RuntimeError(f"bug near {SECRET}")

    def skip(run: ScenarioRun) -> str:
        raise StepSkipped("needs a person")

    def step(name: str, action: Callable[[ScenarioRun], str]) -> Step:
        return Step(name, action)

    scenarios = [
        Scenario("capture-flow", "cf", "d1", (step("checkout", passed),
                                              step("capture", refused), step("lookup", passed))),
        Scenario("states", "st", "d2", (step("lookup", wrong),)),
        Scenario("bugs", "bg", "d3", (step("explode", boom),)),
        Scenario("human", "hu", "d4", (step("approve", skip), step("lookup", passed))),
    ]
    masker = Masker([SECRET])
    ctx = RunContext(run_id="0101000000-abcd", masker=masker, exchanges=ExchangeLog(masker))
    return run_scenarios(scenarios, ctx, target_info={"base_url": "http://gw.example"}), masker


def test_junit_has_the_shape_ci_systems_read_with_consistent_counts() -> None:
    report, masker = build_report()
    text = to_junit(report, masker)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text)  # noqa: S314
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["capture-flow", "states", "bugs", "human"]
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        for key, value in counts.items():
            assert suite.get(key) == str(value), (suite.get("name"), key)
            totals[key] += value
        float(suite.get("time", "x"))
        assert suite.get("timestamp")
        for case in cases:
            assert float(case.get("time", "x")) >= 0
            assert case.get("classname") == f"walletctl.smoke.{suite.get('name')}"
            assert len([c for c in case if c.tag in ("failure", "error", "skipped")]) <= 1
    for key, value in totals.items():
        assert root.get(key) == str(value), key
    float(root.get("time", "x"))
    assert totals == {"tests": 7, "failures": 2, "errors": 1, "skipped": 3}


def test_junit_failure_carries_message_type_and_request_response_summary() -> None:
    report, masker = build_report()
    root = ET.fromstring(to_junit(report, masker))  # noqa: S314
    capture = root.find("testsuite[@name='capture-flow']/testcase[@name='capture']")
    assert capture is not None
    failure = capture.find("failure")
    assert failure is not None
    assert failure.get("type") == "GatewayError"
    assert "HTTP 422" in (failure.get("message") or "")
    body = failure.text or ""
    assert "POST /api/v5/apmTransactions -> 422" in body
    assert '"amount":"41.00"' in body
    assert "TRX-422" in body
    lookup = root.find("testsuite[@name='capture-flow']/testcase[@name='lookup']/skipped")
    assert lookup is not None
    assert "capture" in (lookup.get("message") or "")
    error = root.find("testsuite[@name='bugs']/testcase/error")
    assert error is not None
    assert error.get("type") == "RuntimeError"
    refs = [p.get("value") for p in root.iterfind(
        "testsuite[@name='capture-flow']/properties/property[@name='reference']")]
    assert refs == ["smoke-0101000000-abcd-cf-auth", "smoke-0101000000-abcd-cf-cap1"]


def test_reports_contain_no_secret_or_card_data() -> None:
    report, masker = build_report()
    for text in (to_junit(report, masker), to_json(report, masker)):
        assert SECRET not in text
        assert CRYPTOGRAM not in text
        assert "****" in text  # the masks are there, so the secret text did reach the writer


def test_json_report_shape_and_references() -> None:
    report, masker = build_report()
    doc = json.loads(to_json(report, masker))
    assert doc == to_data(report, masker) | {"duration": doc["duration"]}
    assert doc["run_id"] == "0101000000-abcd"
    assert doc["status"] == "failed"
    assert doc["exit_code"] == 10
    assert doc["counts"] == {"scenarios": 4, "steps": 7, "passed": 1, "failed": 2,
                             "errors": 1, "skipped": 3}
    assert [s["status"] for s in doc["scenarios"]] == ["failed", "failed", "failed", "skipped"]
    step = doc["scenarios"][0]["steps"][1]
    assert step["status"] == "failed"
    assert step["exchanges"][0]["status"] == 422
    assert doc["scenarios"][0]["steps"][0]["exchanges"] == []  # only failures carry them
    assert doc["references"] == [
        {"scenario": "capture-flow", "reference": "smoke-0101000000-abcd-cf-auth",
         "label": "preauth checkout"},
        {"scenario": "capture-flow", "reference": "smoke-0101000000-abcd-cf-cap1",
         "label": "cap1"},
    ]
