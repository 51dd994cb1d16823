"""Every exit status (constants.ExitCode) the redirect-wallet commands can produce.

One test per status, each driving the real CLI into the situation that produces it (as httpie's
``tests/test_exit_status.py`` does). ``SMOKE_FAILED`` belongs to ``walletctl smoke`` and is
tested with it; ``test_every_status_is_covered`` checks no other status is left untested.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.cli.state import ENV
from walletctl.constants import ExitCode


def expect(result: Any, code: ExitCode) -> str:
    assert result.exit_code == code, (
        f"expected exit {int(code)} ({code.name}), got {result.exit_code}\n"
        f"stdout: {result.stdout}\nstderr: {result.stderr}"
    )
    if code != ExitCode.OK:
        first = result.stderr.splitlines()[0] if result.stderr else ""
        # ours: "walletctl: error: ..."; the flag parser's: "Usage: ..." / "Error: ..."
        assert first.startswith(("walletctl: error: ", "Usage:", "Error: ")), result.stderr
        assert "Traceback" not in result.stderr, result.stderr
    return str(result.stderr)


def test_ok(cli: Any) -> None:
    expect(cli("checkout", "--amount", "1", "--ref", "R-1"), ExitCode.OK)


def test_internal_error_is_one_line_without_the_exception_text(cli: Any, api_key: str) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise ValueError(f"bug holding {api_key}")

    ENV.transport = httpx.MockTransport(broken)
    err = expect(cli("lookup", "R-1"), ExitCode.ERROR)
    assert "internal error: ValueError" in err, err
    assert "--debug" in err, err
    assert api_key not in err, "an internal error must not print the exception text"


def test_debug_shows_the_traceback(cli: Any) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise ValueError("bug")

    ENV.transport = httpx.MockTransport(broken)
    from click.testing import CliRunner

    from walletctl.cli.main import app

    result = CliRunner().invoke(app, ["--config", str(cli.config), "--debug", "lookup", "R-1"])
    # --debug adds the traceback and keeps the documented exit code
    assert result.exit_code == ExitCode.ERROR, (result.exception, result.stderr)
    assert "Traceback (most recent call last)" in result.stderr
    assert "ValueError: bug" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["lookup"], ["--output", "yaml", "lookup", "R"], ["checkout", "--amount"],
     ["capture", "R", "--nope"], ["nosuchcommand"], ["capture", "--amount", "1"]],
)
def test_usage(cli: Any, args: list[str]) -> None:
    expect(cli(*args), ExitCode.USAGE)


def test_usage_a_required_value_given_nowhere(make_cli: Any, sandbox: Any,
                                              tmp_path: Path) -> None:
    """A missing required option is a usage error (2) naming the flag and the rule, not an
    invalid request (4); a --from-file that lacks the field is the invalid request."""
    cli = make_cli("http://testserver")
    err = expect(cli("checkout", "--ref", "R-1"), ExitCode.USAGE)
    assert err.splitlines() == [
        "walletctl: error: checkout: missing option --amount (required: the amount in major "
        "units, e.g. 12.34)", "hint: see `walletctl checkout --help`"]
    request = tmp_path / "req.json"
    request.write_text('{"clientSystemTransactionId": "R-1"}')
    err = expect(cli("checkout", "--from-file", str(request)), ExitCode.VALIDATION)
    assert f"amount: is required: give it in --from-file {request} or pass --amount" in err
    # no default currency in the profile: --currency becomes required, for both wallets
    bare = make_cli("http://testserver", currency=None)
    err = expect(bare("checkout", "--amount", "1", "--ref", "R-2"), ExitCode.USAGE)
    assert err.splitlines() == [
        "walletctl: error: checkout: missing option --currency (required: profile 'core' has "
        "no default currency)", 'hint: pass --currency EUR, or set currency = "EUR" under '
        "[profiles.core]"]
    err = expect(bare("authorize", "--account", "A-1", "--ref", "R-3", "--amount", "1"),
                 ExitCode.USAGE)
    assert "authorize: missing option --currency (required: profile 'core'" in err, err
    assert expect(bare("checkout", "--amount", "1", "--ref", "R-4", "--currency", "EUR"),
                  ExitCode.OK) == ""
    assert sandbox.ledger()["count"] == 1


def test_usage_refund_without_confirmation(cli: Any, make_order: Any) -> None:
    make_order("S-1", "5.00", "sale")
    err = expect(cli("refund", "S-1"), ExitCode.USAGE)
    assert "--yes" in err, err


def test_config_missing_file(cli: Any, tmp_path: Path) -> None:
    result = cli("--config", str(tmp_path / "none.toml"), "lookup", "R", config=False)
    err = expect(result, ExitCode.CONFIG)
    assert "none.toml" in err, err


def test_config_unknown_profile(cli: Any) -> None:
    err = expect(cli("-p", "ghost", "lookup", "R"), ExitCode.CONFIG)
    assert "ghost" in err, err


def test_config_secret_not_found(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WALLETCTL_TEST_CORE_KEY")
    err = expect(cli("lookup", "R"), ExitCode.CONFIG)
    assert "WALLETCTL_TEST_CORE_KEY" in err, err


def test_config_inline_secret_in_readable_file(cli: Any, api_key: str) -> None:
    text = cli.config.read_text().replace(
        'key_env = "WALLETCTL_TEST_CORE_KEY"', f'key = "{api_key}"'
    )
    cli.config.write_text(text)
    os.chmod(cli.config, 0o644)
    err = expect(cli("lookup", "R"), ExitCode.CONFIG)
    assert "chmod 600" in err or "0600" in err or "600" in err, err
    assert api_key not in err, err


def test_validation(cli: Any, sandbox: Any) -> None:
    err = expect(cli("checkout", "--amount", "1.234", "--ref", "R-1"), ExitCode.VALIDATION)
    assert "amount" in err, err
    assert sandbox.ledger()["count"] == 0


@pytest.mark.parametrize("bad", [" ORDER-1", "ORDER\t1", "x" * 65, "ORDER\u200b1"])
def test_one_reference_rule_and_one_exit_across_commands(cli: Any, sandbox: Any,
                                                        bad: str) -> None:
    """A reference the rule refuses is the same refusal (exit 4, the same rule text, nothing
    sent) whichever command is given it: read-only or moving money."""
    rules = set()
    for args in (["lookup", bad], ["recon", "--ref", bad], ["refund", bad, "--amount", "1"],
                 ["capture", bad], ["checkout", "--amount", "1", "--ref", bad],
                 ["sandbox", "approve", bad], ["sandbox", "decline", bad]):
        err = expect(cli(*args), ExitCode.VALIDATION)
        line = err.splitlines()[0]
        assert line.startswith("walletctl: error: invalid request: "), line
        rules.add(line.removeprefix("walletctl: error: invalid request: ").partition(": ")[2])
    assert len(rules) == 1, rules
    assert sandbox.ledger()["count"] == 0


def test_declined_preflight(cli: Any, make_order: Any) -> None:
    make_order("A-1", "5.00")
    expect(cli("capture", "A-1", "--amount", "6"), ExitCode.DECLINED)


def test_held_likely_duplicate(cli: Any, make_order: Any, sandbox: Any) -> None:
    make_order("H-1", "5.00")
    expect(cli("capture", "H-1", "--amount", "1"), ExitCode.OK)
    err = expect(cli("capture", "H-1", "--amount", "1"), ExitCode.HELD)
    assert "likely duplicate" in err, err
    assert "H-1-CAP1" in err, err
    assert "--allow-duplicate" in err, err
    expect(cli("capture", "H-1", "--amount", "1", "--allow-duplicate"), ExitCode.OK)


def test_awaiting_approval(cli: Any, make_order: Any, sandbox: Any) -> None:
    with cli.config.open("a") as fh:  # four eyes above 3.00
        fh.write('[profiles.core.history.approvals]\nrefund = "3.00"\n')
    make_order("W-1", "5.00", kind="sale")
    before = sandbox.ledger()["count"]
    err = expect(cli("refund", "W-1", "--amount", "4", "--yes"), ExitCode.AWAITING_APPROVAL)
    assert "filed as approval #1" in err, err
    assert "walletctl approve 1" in err, err
    assert sandbox.ledger()["count"] == before, "nothing may be sent"


def test_declined_by_the_gateway(cli: Any, make_order: Any) -> None:
    make_order("A-2", "5.02")  # sandbox magic amount: the provider refuses every capture
    err = expect(cli("capture", "A-2"), ExitCode.DECLINED)
    assert "HTTP 422" in err, err


def test_gateway_5xx(cli: Any, sandbox: Any) -> None:
    resp = sandbox.client.post("/_sandbox/faults", json={"error-rate": 1, "status": 503})
    assert resp.status_code == 200, resp.text
    err = expect(cli("lookup", "R"), ExitCode.GATEWAY)
    assert "HTTP 503" in err, err


def test_gateway_bad_response(cli: Any) -> None:
    ENV.transport = httpx.MockTransport(lambda r: httpx.Response(200, text="<html>"))
    expect(cli("lookup", "R"), ExitCode.GATEWAY)


def test_network(make_cli: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = expect(make_cli(f"http://127.0.0.1:{port}")("lookup", "R"), ExitCode.NETWORK)
    assert "nothing was sent" in err, err


def test_unknown_outcome(raw_server: Any, make_cli: Any) -> None:
    server = raw_server(b"[]", "drop")
    err = expect(make_cli(server.url)("checkout", "--amount", "1", "--ref", "R-8"),
                 ExitCode.UNKNOWN_OUTCOME)
    assert "walletctl lookup R-8" in err, err


def test_unknown_outcome_from_the_live_sandbox(make_cli: Any, api_key: str) -> None:
    """The sandbox (real port) commits, then drops the answer: exit 8, and lookup shows it."""
    import urllib.request

    from walletctl.sandbox.config import FaultConfig, SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = SandboxConfig(api_key=api_key, quiet=True, faults=FaultConfig(drop_rate=1.0))
    with EmbeddedSandbox(config) as live:
        cli = make_cli(live.url)
        err = expect(cli("checkout", "--amount", "1", "--ref", "R-9"), ExitCode.UNKNOWN_OUTCOME)
        assert "walletctl lookup R-9" in err, err
        off = urllib.request.Request(f"{live.url}/_sandbox/faults", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(off, timeout=5) as resp:
            assert resp.status == 200
        result = cli("-o", "json", "lookup", "R-9")
        expect(result, ExitCode.OK)
        refs = [r["clientSystemTransactionId"] for r in json.loads(result.stdout)]
        assert refs == ["R-9"], "the dropped checkout was committed: lookup must show it"


def test_mismatch(make_cli: Any, api_key: str) -> None:
    """``recon``: a refund posted straight to the gateway (not through walletctl) is money the
    history does not record: exit 13, the refund named."""
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(api_key=api_key, quiet=True)) as live:
        cli = make_cli(live.url)
        expect(cli("checkout", "--amount", "10", "--ref", "R-13", "--type", "sale"),
               ExitCode.OK)
        httpx.post(f"{live.url}/_sandbox/checkouts/R-13/approve", timeout=5).raise_for_status()
        expect(cli("recon", "--ref", "R-13"), ExitCode.OK)
        httpx.post(f"{live.url}/api/v5/apmTransactions", timeout=5, json={
            "merchantId": "M-1001", "storeId": "S-01", "userId": "dashboard",
            "type": "ecom.refund", "amount": "400", "currencyCode": "EUR",
            "clientSystemTransactionId": "R-13-DASH", "clientSystemInvoiceId": "R-13",
            "apmDetails": {"apmProvider": "WalletV2"}},
            headers={"Authorization": f"PublicApiKey {api_key}"}).raise_for_status()
        err = expect(cli("recon", "--ref", "R-13"), ExitCode.MISMATCH)
        assert "R-13-DASH not in the history" in err, err


def test_auth(make_cli: Any, sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cli = make_cli("http://testserver")
    monkeypatch.setenv("WALLETCTL_TEST_CORE_KEY", "wrong-key")
    err = expect(cli("lookup", "R"), ExitCode.AUTH)
    assert "HTTP 401" in err, err
    assert "wrong-key" not in err, err


def test_interrupted(cli: Any) -> None:
    def interrupt(request: httpx.Request) -> httpx.Response:
        raise KeyboardInterrupt

    ENV.transport = httpx.MockTransport(interrupt)
    err = expect(cli("lookup", "R"), ExitCode.INTERRUPTED)
    assert "interrupted" in err, err


def test_interrupt_during_a_money_move_is_unknown_outcome(cli: Any, make_order: Any,
                                                          sandbox: Any) -> None:
    """Ctrl-C while a capture is in flight: it may have been applied, so say so (exit 8)."""
    make_order("A-4", "5.00")

    def interrupt_posts(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            raise KeyboardInterrupt
        response: httpx.Response = sandbox.transport.handle_request(request)
        response.read()
        return response

    ENV.transport = httpx.MockTransport(interrupt_posts)
    err = expect(cli("capture", "A-4"), ExitCode.UNKNOWN_OUTCOME)
    assert "interrupted" in err, err
    assert "walletctl lookup A-4-CAP1" in err, err


def test_exit_codes_survive_the_real_entry_point(make_cli: Any, tmp_path: Path) -> None:
    """The console script (``python -m walletctl``) exits with the same statuses."""
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = make_cli(f"http://127.0.0.1:{port}")
    cases = [
        (["lookup", "R"], ExitCode.NETWORK),
        (["checkout", "--amount", "1.001", "--ref", "R"], ExitCode.VALIDATION),
        (["--output", "yaml", "lookup", "R"], ExitCode.USAGE),
        (["-p", "ghost", "lookup", "R"], ExitCode.CONFIG),
    ]
    for args, code in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "walletctl", "--config", str(cli.config), *args],
            capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False,
        )
        assert proc.returncode == code, (args, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == "", (args, proc.stdout)


def test_every_status_is_covered() -> None:
    """Every status is the expected one of some ``expect(...)`` call in this file (read
    statically, so it also holds under pytest-xdist)."""
    import ast

    tree = ast.parse(Path(__file__).read_text())
    expected = {
        node.args[1].attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "expect" and len(node.args) == 2
        and isinstance(node.args[1], ast.Attribute)
    }
    # CLOSED_PIPE needs a real pipe closed early: tests/core/test_closed_pipe.py
    missing = {c.name for c in ExitCode} - expected - {ExitCode.SMOKE_FAILED.name,
                                                       ExitCode.CLOSED_PIPE.name}
    assert not missing, f"exit codes with no test: {sorted(missing)}"


def test_exit_codes_are_stable() -> None:
    """The README documents these numbers; scripts depend on them."""
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0, "ERROR": 1, "USAGE": 2, "CONFIG": 3, "VALIDATION": 4, "DECLINED": 5,
        "GATEWAY": 6, "NETWORK": 7, "UNKNOWN_OUTCOME": 8, "AUTH": 9, "SMOKE_FAILED": 10,
        "HELD": 11, "AWAITING_APPROVAL": 12, "MISMATCH": 13, "INTERRUPTED": 130,
        "CLOSED_PIPE": 141,
    }, json.dumps({c.name: int(c) for c in ExitCode})
