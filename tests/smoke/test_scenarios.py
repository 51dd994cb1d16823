"""Every scenario against a real sandbox, and each failure mode detected and reported."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from walletctl.config.profiles_file import load_profile
from walletctl.constants import ExitCode
from walletctl.masking import Masker
from walletctl.ops.smoke import SmokeOptions, SmokeReport, run_smoke
from walletctl.ops.smoke.report import to_json, to_junit
from walletctl.ops.smoke.scenarios import SCENARIOS, Amounts
from walletctl.ops.smoke.target import ExchangeLog, embedded_sandbox
from walletctl.sandbox.server import EmbeddedSandbox

from .conftest import API_KEY, SERVICE_SECRET, ProfileFactory


def steps_of(report: SmokeReport, scenario: str) -> dict[str, tuple[str, str | None]]:
    sc = next(s for s in report.scenarios if s.name == scenario)
    return {s.name: (s.status, s.message) for s in sc.steps}


@pytest.mark.parametrize("amount_format", ["minor", "decimal"])
def test_every_scenario_passes_against_the_embedded_sandbox(amount_format: str) -> None:
    with embedded_sandbox(amount_format=amount_format) as profile:
        assert profile.amount_format == amount_format
        report = run_smoke(profile, SmokeOptions(), embedded=True)
        # every reference is real: each one can be looked up afterwards
        from walletctl.client.gateway import GatewayClient

        with GatewayClient(profile) as client:
            for ref in report.references:
                if ref.label.startswith("refused"):
                    continue  # refused by the gateway: nothing was stored
                records = client.lookup(ref.reference)
                assert any(r.client_system_transaction_id == ref.reference for r in records), ref
    bad = [(s.scenario, s.name, s.message) for s in report.steps if s.status != "passed"]
    assert bad == []
    assert report.exit_code == ExitCode.OK
    refs = [r.reference for r in report.references]
    assert len(refs) == len(set(refs)) == 15
    assert all(r.startswith(f"smoke-{report.run_id}-") for r in refs)


def test_every_scenario_including_browser_wallet_passes_against_a_profile(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    report = run_smoke(profile, SmokeOptions())
    assert [s.name for s in report.scenarios] == list(SCENARIOS)
    bad = [(s.scenario, s.name, s.message) for s in report.steps if s.status != "passed"]
    assert bad == []
    assert report.exit_code == ExitCode.OK
    wallet = [r.reference for r in report.references if r.scenario == "browser-wallet"]
    assert len(wallet) == 3


def test_browser_wallet_secrets_never_reach_the_exchange_log(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    masker = Masker()
    log = ExchangeLog(masker)
    report = run_smoke(profile, SmokeOptions(scenarios=["browser-wallet"]), masker=masker,
                       log=log)
    assert report.exit_code == ExitCode.OK
    # learned on the way: the issued API key + encryption key, the cryptogram, the 3DS value
    assert len(masker.secrets) >= 6
    assert len(log.all()) >= 10
    text = "\n".join(ex.summary() for ex in log.all()) + to_json(report, masker)
    for secret in (*masker.secrets, API_KEY, SERVICE_SECRET):
        assert secret not in text
    assert "4111111111111111" not in text


def test_browser_wallet_skips_token_minting_on_a_real_gateway(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    report = run_smoke(profile, SmokeOptions(scenarios=["browser-wallet"]),
                       transport=_no_control_routes(sandbox))
    steps = steps_of(report, "browser-wallet")
    assert steps["public keys"][0] == "passed"
    status, reason = steps["wallet tokens"]
    assert status == "skipped"
    assert "browser" in (reason or "")
    assert steps["lookup"][0] == "skipped"
    assert report.exit_code == ExitCode.OK


def test_capture_refused_by_provider_fails_the_capture_step_with_exit_10(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    # magic ending 02: the sandbox's provider refuses every capture of this pre-authorisation
    profile = load_profile("ci", write_profile(sandbox.url))
    options = SmokeOptions(scenarios=["preauth-capture-refund", "redirect-sale"],
                           amounts=["preauth=50.02"])
    masker = Masker()
    report = run_smoke(profile, options, masker=masker)
    steps = steps_of(report, "preauth-capture-refund")
    assert steps["lookup approved"][0] == "passed"
    status, message = steps["partial capture"]
    assert status == "failed"
    assert message is not None
    assert message.startswith("gateway answered HTTP 422"), message
    assert steps["second capture"] == ("skipped", "not run: step 'partial capture' failed")
    assert steps_of(report, "redirect-sale")["lookup approved"][0] == "passed"
    assert report.exit_code == ExitCode.SMOKE_FAILED
    junit = to_junit(report, masker)
    assert "POST /api/v5/apmTransactions -&gt; 422" in junit
    assert API_KEY not in junit
    assert API_KEY not in to_json(report, masker)


def test_declined_approval_fails_the_lookup_step_naming_the_state(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    report = run_smoke(profile, SmokeOptions(scenarios=["redirect-sale"],
                                             amounts=["sale=10.01"]))
    status, message = steps_of(report, "redirect-sale")["lookup approved"]
    assert status == "failed"
    assert message is not None
    assert "expected 'Approved', got 'Declined'" in message
    assert report.exit_code == ExitCode.SMOKE_FAILED


def test_refund_refused_by_provider_fails_the_refund_step(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    report = run_smoke(profile, SmokeOptions(scenarios=["preauth-capture-refund"],
                                             amounts=["preauth=50.05"]))
    steps = steps_of(report, "preauth-capture-refund")
    assert steps["second capture"][0] == "passed"
    assert steps["partial refund"][0] == "failed"
    assert steps["lookup totals"][0] == "skipped"


def test_wrong_api_key_fails_fast_with_the_credentials_code(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url, key="not-the-right-key"))
    report = run_smoke(profile, SmokeOptions())
    assert report.exit_code == ExitCode.AUTH
    statuses = [s.status for s in report.steps]
    assert statuses[0] == "failed"
    assert set(statuses[1:]) == {"skipped"}
    assert sum(len(s.exchanges) for s in report.steps) == 1  # one request, then stop
    assert report.aborted is not None
    assert "HTTP 401" in report.aborted
    assert "not-the-right-key" not in to_json(report, Masker(["not-the-right-key"]))


def test_gateway_without_headless_approval_skips_with_reason(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    profile = load_profile("ci", write_profile(sandbox.url))
    report = run_smoke(profile, SmokeOptions(scenarios=["redirect-sale"]),
                       transport=_no_control_routes(sandbox))
    steps = steps_of(report, "redirect-sale")
    assert steps["checkout"][0] == "passed"
    status, reason = steps["approve"]
    assert status == "skipped"
    assert reason is not None
    assert "--approve-url-command" in reason
    assert steps["lookup approved"][0] == "skipped"
    assert report.exit_code == ExitCode.OK
    strict = run_smoke(profile, SmokeOptions(scenarios=["redirect-sale"], fail_on_skip=True),
                       transport=_no_control_routes(sandbox))
    assert strict.exit_code == ExitCode.SMOKE_FAILED


def test_approve_url_command_supplies_the_approver(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    import shlex
    import sys

    profile = load_profile("ci", write_profile(sandbox.url))
    script = (
        "import os, sys, httpx; "
        "assert sys.argv[1] == os.environ['WALLETCTL_SMOKE_REDIRECT_URL']; "
        "assert sys.argv[1].startswith('http'); "
        f"r = httpx.post('{sandbox.url}/_sandbox/checkouts/' "
        "+ os.environ['WALLETCTL_SMOKE_REFERENCE'] + '/approve'); "
        "sys.exit(0 if r.status_code == 200 else 3)"
    )
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"
    report = run_smoke(
        profile,
        SmokeOptions(scenarios=["redirect-sale"], approve_command=command),
        transport=_no_control_routes(sandbox),
    )
    assert steps_of(report, "redirect-sale")["approve"] == ("passed", None)
    assert report.exit_code == ExitCode.OK

    failing = f"{shlex.quote(sys.executable)} -c {shlex.quote('import sys; sys.exit(4)')}"
    report = run_smoke(profile, SmokeOptions(scenarios=["redirect-sale"],
                                             approve_command=failing))
    status, message = steps_of(report, "redirect-sale")["approve"]
    assert status == "failed"
    assert message == "the approver command exited with status 4"


def test_amount_overrides_are_checked() -> None:
    from walletctl.errors import UsageError

    assert Amounts().with_overrides(["preauth=12.5"]).preauth == Decimal("12.5")
    for bad in ("preauth", "nothing=1", "sale=abc", "sale=-1"):
        with pytest.raises(UsageError, match="--amount"):
            Amounts().with_overrides([bad])


def _no_control_routes(sandbox: EmbeddedSandbox) -> httpx.BaseTransport:
    """A gateway like the real one: the sandbox, minus its /_sandbox control routes."""
    real = httpx.HTTPTransport()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/_sandbox"):
            return httpx.Response(404, json={"code": "404", "description": "NotFound"})
        response = real.handle_request(request)
        response.read()
        return httpx.Response(response.status_code, headers=response.headers,
                              content=response.content)

    return httpx.MockTransport(handler)


def test_concurrent_runs_on_one_sandbox_never_collide(
    sandbox: EmbeddedSandbox, write_profile: ProfileFactory
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    profile = load_profile("ci", write_profile(sandbox.url))
    options = SmokeOptions(scenarios=["preauth-capture-refund", "refusals"], ref_prefix="ci")
    with ThreadPoolExecutor(max_workers=3) as pool:
        reports = list(pool.map(lambda _: run_smoke(profile, options), range(3)))
    for report in reports:
        bad = [(s.scenario, s.name, s.message) for s in report.steps if s.status != "passed"]
        assert bad == []
    refs = [r.reference for report in reports for r in report.references]
    assert len(refs) == len(set(refs)) == 3 * 9
    assert len({report.run_id for report in reports}) == 3
