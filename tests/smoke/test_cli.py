"""`walletctl smoke` through the real app (CliRunner): exit codes, reports, listing, no secrets."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET  # parses only our own report
from pathlib import Path

from click.testing import CliRunner, Result

from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.ops.smoke.scenarios import SCENARIOS
from walletctl.sandbox.server import EmbeddedSandbox

from .conftest import API_KEY, KEY_ENV, ProfileFactory


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def assert_no_secret(result: Result, *files: Path, secret: str = API_KEY) -> None:
    for text in (result.stdout, result.stderr, *(f.read_text() for f in files)):
        assert secret not in text


def test_list_names_every_scenario_with_a_description() -> None:
    result = invoke("-o", "table", "smoke", "--list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert all(len(line.split(None, 1)) == 2 for line in lines)
    data = json.loads(invoke("smoke", "--list", "--json").stdout)
    assert [d["name"] for d in data] == list(SCENARIOS)
    assert "partial capture" in data[1]["steps"]


def test_embedded_run_passes_and_writes_junit_and_json(tmp_path: Path) -> None:
    junit, report = tmp_path / "reports" / "smoke.xml", tmp_path / "smoke.json"
    result = invoke("smoke", "--embedded", "-s", "redirect-sale", "-s", "refusals",
                    "--junit", str(junit), "--json-file", str(report), "--json")
    assert result.exit_code == ExitCode.OK, result.output
    doc = json.loads(result.stdout)  # stdout holds exactly the JSON document
    assert doc == json.loads(report.read_text())
    assert [s["name"] for s in doc["scenarios"]] == ["redirect-sale", "refusals"]
    assert doc["status"] == "passed"
    assert doc["counts"]["failed"] == 0
    assert doc["target"]["profile"] == "(embedded sandbox)"
    assert len(doc["references"]) == 6
    root = ET.parse(junit).getroot()  # noqa: S314
    assert root.get("tests") == "10"
    assert root.get("failures") == "0"
    assert "PASSED   redirect-sale / checkout" in result.stderr  # CI log lines, not a live view
    assert f"JUnit report written to {junit}" in result.stderr


def test_profile_run_prints_summary_and_references(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory, tmp_path: Path
) -> None:
    config = write_profile(sandbox.url)
    junit, report = tmp_path / "j.xml", tmp_path / "r.json"
    result = invoke("--config", str(config), "smoke", "--profile", "ci", "--ref-prefix", "gh-42",
                    "-s", "preauth-reversal", "--junit", str(junit), "--json-file", str(report))
    assert result.exit_code == ExitCode.OK, result.output
    assert "1 passed, 0 failed, 0 skipped" in result.stdout
    assert "references (walletctl lookup REF):" in result.stdout
    refs = [ln.split()[0] for ln in result.stdout.splitlines() if ln.startswith("  gh-42-")]
    assert len(refs) == 2
    assert_no_secret(result, junit, report)


def test_capture_failure_exits_10_naming_the_scenario(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory, tmp_path: Path
) -> None:
    config = write_profile(sandbox.url)
    junit = tmp_path / "j.xml"
    result = invoke("--config", str(config), "smoke", "-s", "preauth-capture-refund",
                    "--amount", "preauth=50.02", "--junit", str(junit))
    assert result.exit_code == ExitCode.SMOKE_FAILED, result.output
    assert "FAILED   preauth-capture-refund / partial capture" in result.stderr
    assert "gateway answered HTTP 422" in result.stderr
    assert "smoke failed: preauth-capture-refund" in result.stderr
    failure = ET.parse(junit).getroot().find(".//testcase[@name='partial capture']/failure")  # noqa: S314
    assert failure is not None
    assert "HTTP 422" in (failure.get("message") or "")
    assert_no_secret(result, junit)


def test_wrong_api_key_exits_9_fast_without_showing_the_key(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory, tmp_path: Path
) -> None:
    wrong = "wrong-key-but-still-secret-55"
    config = write_profile(sandbox.url, key=wrong)
    junit = tmp_path / "j.xml"
    result = invoke("--config", str(config), "smoke", "--junit", str(junit), "--json")
    assert result.exit_code == ExitCode.AUTH, result.output
    assert "smoke run aborted: credentials refused" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["counts"]["failed"] == 1
    assert doc["counts"]["passed"] == 0
    assert doc["exit_code"] == 9
    assert_no_secret(result, junit, secret=wrong)


def test_missing_secret_is_a_config_error(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory, monkeypatch: object
) -> None:
    config = write_profile(sandbox.url, key=None)
    result = invoke("--config", str(config), "smoke")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert KEY_ENV in result.stderr
    assert "Traceback" not in result.output


def test_no_profile_at_all_is_a_config_error(tmp_path: Path) -> None:
    result = invoke("--config", str(tmp_path / "none.toml"), "smoke")
    assert result.exit_code == ExitCode.CONFIG, result.output


def test_unknown_scenario_and_bad_prefix_are_usage_errors() -> None:
    result = invoke("smoke", "--embedded", "-s", "nope")
    assert result.exit_code == ExitCode.USAGE
    assert "unknown scenario 'nope'" in result.stderr
    result = invoke("smoke", "--embedded", "--ref-prefix", "bad prefix ")
    assert result.exit_code == ExitCode.USAGE
    assert "--ref-prefix: ends with a space; a reference must be" in result.stderr
    result = invoke("smoke", "--embedded", "--approve-url-command", "no-such-approver-xyz")
    assert result.exit_code == ExitCode.USAGE
    assert "'no-such-approver-xyz' was not found" in result.stderr
    result = invoke("smoke", "--embedded", "--amount", "preauth")
    assert result.exit_code == ExitCode.USAGE


def test_unwritable_report_path_fails_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke("smoke", "--embedded", "--junit", str(blocker / "smoke.xml"))
    assert result.exit_code == ExitCode.VALIDATION, result.output  # an output path: exit 4
    assert "--junit: cannot create" in result.stderr
    assert "PASSED" not in result.stderr  # nothing ran


def test_unreachable_gateway_aborts_with_the_connection_code(
    write_profile: ProfileFactory,
) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = write_profile(f"http://127.0.0.1:{port}")
    result = invoke("--config", str(config), "smoke", "-s", "redirect-sale", "--json")
    assert result.exit_code == ExitCode.NETWORK, result.output
    doc = json.loads(result.stdout)
    checkout = doc["scenarios"][0]["steps"][0]
    assert checkout["status"] == "failed"
    assert "could not connect" in checkout["message"]
    assert checkout["error_type"] == "NetworkError"


def test_live_table_folds_finished_and_pending_scenarios() -> None:
    from rich.console import Console

    from walletctl.ops.smoke import ScenarioResult, StepResult
    from walletctl.render.smoke_views import _results_table

    done = ScenarioResult("alpha", "", [StepResult("alpha", n, "passed", 0.5) for n in "abc"])
    running = ScenarioResult("beta", "", [StepResult("beta", "one", "failed", 0.1, "boom"),
                                          StepResult("beta", "two", "skipped")])
    waiting = ScenarioResult("gamma", "", [StepResult("gamma", "x"), StepResult("gamma", "y")])
    console = Console(record=True, width=160, color_system=None)
    console.print(_results_table([done, running, waiting], live=True, width=160))
    text = console.export_text()
    assert "3/3 steps" in text
    assert "1.50s" in text
    assert "boom" in text
    assert "two" in text
    assert "2 steps" in text
    assert " x " not in text  # pending scenario folded
    console = Console(record=True, width=160, color_system=None)
    console.print(_results_table([done], live=False, width=160))
    assert "3/3 steps" not in console.export_text()  # the final table shows every step


def test_verbose_traces_requests_with_secrets_masked(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    config = write_profile(sandbox.url)
    result = invoke("--config", str(config), "-v", "smoke", "-s", "browser-wallet")
    assert result.exit_code == ExitCode.OK, result.output
    assert "> POST " in result.stderr
    assert "/api/v5/paymentAccounts" in result.stderr
    assert_no_secret(result)
    assert "smoke-test-service-secret" not in result.stderr
    assert "4111111111111111" not in result.stderr
    assert "pk_" not in result.stderr  # the sandbox's issued API keys start with pk_
