"""The scenario framework with fake steps: statuses, skips, fail-fast, references, masking."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, GatewayError, RefusedError
from walletctl.masking import Masker
from walletctl.ops.smoke import (
    RunContext,
    Scenario,
    ScenarioRun,
    SmokeObserver,
    SmokeReport,
    Step,
    StepResult,
    StepSkipped,
    check,
    check_equal,
    new_run_id,
    run_scenarios,
)

SECRET = "s3cr3t-value-Zq9"


def ok(detail: str | None = None) -> Callable[[ScenarioRun], str | None]:
    return lambda run: detail


def fail_with(exc: BaseException) -> Callable[[ScenarioRun], str | None]:
    def action(run: ScenarioRun) -> str | None:
        raise exc

    return action


def scenario(name: str, *actions: Callable[[ScenarioRun], str | None]) -> Scenario:
    return Scenario(
        name=name,
        code=name[:4],
        description=f"{name} scenario",
        steps=tuple(Step(f"step{i}", a) for i, a in enumerate(actions, 1)),
    )


def run(*scenarios: Scenario, fail_on_skip: bool = False,
        observer: SmokeObserver | None = None) -> SmokeReport:
    ctx = RunContext(run_id="0101000000-abcd", masker=Masker([SECRET]))
    ticks = itertools.count()
    return run_scenarios(
        scenarios, ctx, observer=observer, fail_on_skip=fail_on_skip,
        clock=lambda: float(next(ticks)) / 4,
    )


def statuses(report: SmokeReport) -> list[str]:
    return [s.status for s in report.steps]


def test_all_passing_exits_ok_with_details_and_durations() -> None:
    report = run(scenario("one", ok("first"), ok()), scenario("two", ok()))
    assert statuses(report) == ["passed"] * 3
    assert report.exit_code == ExitCode.OK
    assert report.scenarios[0].steps[0].detail == "first"
    assert all(s.duration > 0 for s in report.steps)
    assert [s.status for s in report.scenarios] == ["passed", "passed"]


def test_failed_assertion_fails_step_skips_rest_and_exits_10() -> None:
    def bad(run: ScenarioRun) -> str:
        check_equal("Declined", "Approved", "state of X")
        return "unreachable"

    report = run(scenario("one", ok(), bad, ok()), scenario("two", ok()))
    assert statuses(report) == ["passed", "failed", "skipped", "passed"]
    failed = report.scenarios[0].steps[1]
    assert failed.message == "state of X: expected 'Approved', got 'Declined'"
    assert report.scenarios[0].steps[2].message == "not run: step 'step2' failed"
    assert report.exit_code == ExitCode.SMOKE_FAILED
    assert report.scenarios[0].status == "failed"
    assert report.scenarios[1].status == "passed"


def test_check_passes_silently_and_fails_with_message() -> None:
    check(True, "never")
    def wrong(run: ScenarioRun) -> str:
        check(False, "amount is wrong")
        return "unreachable"

    report = run(scenario("one", wrong))
    assert report.steps[0].message == "amount is wrong"


def test_domain_error_is_a_failure_with_its_message() -> None:
    report = run(scenario("one", fail_with(RefusedError("capture exceeds 40.00 EUR"))))
    step = report.steps[0]
    assert (step.status, step.error_type) == ("failed", "RefusedError")
    assert step.message == "capture exceeds 40.00 EUR"
    assert report.exit_code == ExitCode.SMOKE_FAILED


def test_unexpected_exception_is_an_error_with_masked_message() -> None:
    report = run(scenario("one", fail_with(KeyError(f"token {SECRET}")), ok()))
    step = report.steps[0]
    assert step.status == "error"
    assert step.message is not None
    assert SECRET not in step.message
    assert "KeyError" in step.message
    assert report.steps[1].status == "skipped"
    assert report.exit_code == ExitCode.SMOKE_FAILED


def test_skip_skips_rest_of_scenario_and_is_not_a_failure_unless_asked() -> None:
    def needs_person(run: ScenarioRun) -> str:
        raise StepSkipped("a person must approve")

    sc = scenario("one", ok(), needs_person, ok())
    report = run(sc, scenario("two", ok()))
    assert statuses(report) == ["passed", "skipped", "skipped", "passed"]
    assert report.scenarios[0].steps[1].message == "a person must approve"
    assert "step2" in (report.scenarios[0].steps[2].message or "")
    assert report.scenarios[0].status == "skipped"
    assert report.exit_code == ExitCode.OK
    assert run(sc, fail_on_skip=True).exit_code == ExitCode.SMOKE_FAILED


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_abort_the_whole_run(status: int) -> None:
    calls: list[str] = []

    def later(run: ScenarioRun) -> str:
        calls.append("ran")
        return "ran"

    err = GatewayError(status, description="Unauthorized")
    report = run(scenario("one", fail_with(err), later), scenario("two", later))
    assert calls == []
    assert statuses(report) == ["failed", "skipped", "skipped"]
    assert report.exit_code == ExitCode.AUTH
    assert report.aborted is not None
    assert "credentials refused" in report.aborted
    assert "run aborted" in (report.scenarios[1].steps[0].message or "")


def test_config_problem_during_run_aborts_with_config_code() -> None:
    exc = ConfigError("environment variable X is not set", location="profiles.ci -> auth")
    report = run(scenario("one", fail_with(exc)), scenario("two", ok()))
    assert report.exit_code == ExitCode.CONFIG
    assert statuses(report) == ["failed", "skipped"]


def test_a_404_or_422_does_not_abort() -> None:
    report = run(scenario("one", fail_with(GatewayError(422))), scenario("two", ok()))
    assert report.exit_code == ExitCode.SMOKE_FAILED
    assert statuses(report) == ["failed", "passed"]


def test_unavailable_scenario_is_skipped_with_reason() -> None:
    sc = Scenario("wp", "wp", "wallet", (Step("a", ok()), Step("b", ok())),
                  unavailable=lambda ctx: "module not installed")
    report = run(sc)
    assert statuses(report) == ["skipped", "skipped"]
    assert {s.message for s in report.steps} == {"module not installed"}


def test_observer_sees_every_step_start_and_finish() -> None:
    seen: list[tuple[str, str]] = []

    class Recorder(SmokeObserver):
        def step_started(self, result: StepResult) -> None:
            seen.append(("start", result.name))

        def step_finished(self, result: StepResult) -> None:
            seen.append((result.status, result.name))

    run(scenario("one", ok(), fail_with(StepSkipped("no")), ok()), observer=Recorder())
    assert seen == [("start", "step1"), ("passed", "step1"), ("start", "step2"),
                    ("skipped", "step2"), ("skipped", "step3")]


def test_references_are_unique_per_run_prefixed_and_recorded() -> None:
    refs: list[str] = []

    def mint(run: ScenarioRun) -> str:
        refs.append(run.ref("auth", "preauth checkout"))
        refs.append(run.ref("auth"))  # same tag -> same reference
        refs.append(run.ref("cap1"))
        return "ok"

    sc = scenario("alpha", mint)
    ctx_a = RunContext(run_id=new_run_id(), masker=Masker(), ref_prefix="ci")
    ctx_b = RunContext(run_id=new_run_id(), masker=Masker(), ref_prefix="ci")
    report = run_scenarios([sc], ctx_a)
    run_scenarios([sc], ctx_b)
    assert ctx_a.run_id != ctx_b.run_id
    assert refs[0] == refs[1] == f"ci-{ctx_a.run_id}-alph-auth"
    assert len(set(refs)) == 4  # 2 per run, none shared between runs
    assert [r.reference for r in report.references] == [refs[0], refs[2]]
    assert report.references[0].label == "preauth checkout"
    assert report.scenarios[0].references == [refs[0], refs[2]]


def test_too_long_reference_is_a_config_error() -> None:
    ctx = RunContext(run_id="x" * 60, masker=Masker())
    with pytest.raises(ConfigError, match="is 72 characters long; a reference must be 1-64"):
        ctx.reference(scenario("a", ok()), "tag")


# --------------------------------------------------------------------------- masking


def test_masker_replaces_known_secrets_json_keys_auth_headers_and_pans() -> None:
    m = Masker([SECRET, "ab"])  # too-short values are ignored
    text = m.text(
        f'key {SECRET} {{"apiKey": "other-key-123", "encryptionKeyId": "kid-1", '
        '"cryptogram": "AgAAAAAAB"}} Authorization: PublicApiKey zzz-key '
        "card 4111111111111111 id 1234567890123456 about"
    )
    assert SECRET not in text
    assert "other-key-123" not in text
    assert "kid-1" in text
    assert "AgAAAAAAB" not in text
    assert "zzz-key" not in text
    assert "PublicApiKey ****" in text
    assert "4111111111111111" not in text
    assert "411111******1111" in text
    assert "1234567890123456" in text  # not a Luhn-valid number: kept
    assert "about" in text
    assert m.text("ab") == "ab"


def test_masker_learns_secrets_from_payloads_and_masks_data() -> None:
    m = Masker()
    m.add_from({"keys": [{"apiKey": "learned-api-key"}], "x": {"encryptionKey": "learned-enc"}})
    assert m.text("echo learned-api-key and learned-enc") == "echo **** and ****"
    assert m.data({"Cryptogram": "abc", "nested": [{"note": "learned-enc"}], "n": 1}) == {
        "Cryptogram": "****", "nested": [{"note": "****"}], "n": 1,
    }


def test_report_target_url_drops_credentials() -> None:
    from walletctl.ops.smoke import _without_userinfo

    assert _without_userinfo("https://ops:hunter22@gw.example:8443/base") == (
        "https://gw.example:8443/base"
    )
    assert _without_userinfo("http://127.0.0.1:8765") == "http://127.0.0.1:8765"


def test_ctrl_c_keeps_what_ran_and_exits_130() -> None:
    report = run(
        scenario("first", ok("done")),
        scenario("second", ok("done"), fail_with(KeyboardInterrupt()), ok()),
        scenario("third", ok()),
    )
    statuses = [(s.scenario, s.name, s.status) for s in report.steps]
    assert statuses == [
        ("first", "step1", "passed"),
        ("second", "step1", "passed"),
        ("second", "step2", "skipped"),
        ("second", "step3", "skipped"),
        ("third", "step1", "skipped"),
    ], statuses
    assert report.exit_code == ExitCode.INTERRUPTED, report.exit_code
    assert "interrupted" in (report.steps[2].message or ""), report.steps[2]
