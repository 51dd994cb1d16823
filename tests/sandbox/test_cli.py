"""``walletctl sandbox ...`` commands, and the real CLI driving the real sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from sandbox_fixtures import AUTH_HEADERS, make_checkout_body
from walletctl.constants import ExitCode
from walletctl.sandbox.server import EmbeddedSandbox

from .helpers import CHECKOUT


def run(*args: str) -> Result:
    from walletctl.cli.main import app

    result = CliRunner().invoke(app, list(args), catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"walletctl {args} raised {result.exception!r}")
    return result


def _checkout(sb: EmbeddedSandbox, ref: str, amount: str = "1234") -> None:
    resp = httpx.post(sb.url + CHECKOUT, json=make_checkout_body(ref, amount),
                      headers=AUTH_HEADERS)
    assert resp.status_code == 200, resp.text


def test_approve_decline_cancel_with_url(live_sandbox: EmbeddedSandbox) -> None:
    for ref, action, state in (("C-1", "approve", "Approved"), ("C-2", "decline", "Declined"),
                               ("C-3", "cancel", "Cancelled")):
        _checkout(live_sandbox, ref)
        result = run("-o", "table", "sandbox", action, ref, "--url", live_sandbox.url)
        assert result.exit_code == 0, result.output
        assert f"{ref}: {state}" in result.stdout
    again = run("sandbox", "approve", "C-1", "--url", live_sandbox.url)
    assert again.exit_code == ExitCode.DECLINED, again.output
    assert "already decided" in again.stderr
    missing = run("sandbox", "approve", "NOPE", "--url", live_sandbox.url)
    assert missing.exit_code == ExitCode.DECLINED
    assert "NOPE" in missing.stderr


def test_approve_uses_the_profile(live_sandbox: EmbeddedSandbox,
                                  sandbox_profile_file: Path) -> None:
    _checkout(live_sandbox, "P-1")
    result = run("--config", str(sandbox_profile_file), "-p", "sandbox", "-o", "json",
                 "sandbox", "approve", "P-1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["state"] == "Approved"


def test_ledger_and_reset_commands(live_sandbox: EmbeddedSandbox) -> None:
    _checkout(live_sandbox, "L-1")
    table = run("sandbox", "ledger", "--url", live_sandbox.url)
    assert table.exit_code == 0, table.output
    assert "L-1" in table.stdout
    assert "Pending" in table.stdout
    as_json = run("-o", "json", "sandbox", "ledger", "--url", live_sandbox.url)
    assert json.loads(as_json.stdout)["count"] == 1
    reset = run("sandbox", "reset", "--url", live_sandbox.url)
    assert reset.exit_code == 0, reset.output
    assert httpx.get(live_sandbox.url + "/_sandbox/ledger").json()["count"] == 0


def test_unreachable_sandbox_is_a_network_error() -> None:
    result = run("sandbox", "reset", "--url", "http://127.0.0.1:9")
    assert result.exit_code == ExitCode.NETWORK, result.output
    assert "cannot connect" in result.stderr


def test_values_lists_the_magic_amounts() -> None:
    result = run("-o", "table", "sandbox", "values")
    assert result.exit_code == 0
    for digits in ("01", "02", "03", "04", "05"):
        assert f"..{digits}" in result.stdout


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--amount-format", "cents"], "amount-format"),
        (["--error-rate", "2"], "error_rate"),
        (["--host", "0.0.0.0", "--drop-rate", "0.1"], "loopback"),
        (["--latency", "20000"], "latency"),
    ],
)
def test_serve_refuses_bad_flags(args: list[str], word: str) -> None:
    result = run("sandbox", "serve", *args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert word in result.stderr


def test_sandbox_help_does_not_import_the_server() -> None:
    code = (
        "import sys\n"
        "from walletctl.cli.main import app\n"
        "bad = [m for m in ('fastapi', 'uvicorn', 'httpx', 'walletctl.sandbox.app') "
        "if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    imported = out.stdout.strip()
    assert "fastapi" not in imported, imported
    assert "uvicorn" not in imported, imported
    assert "walletctl.sandbox.app" not in imported, imported


def test_real_cli_lifecycle_against_the_sandbox(live_sandbox: EmbeddedSandbox,
                                               sandbox_profile_file: Path) -> None:
    base = ["--config", str(sandbox_profile_file), "-p", "sandbox", "-o", "json"]
    created = run(*base, "checkout", "--amount", "40.00", "--currency", "EUR", "--ref",
                  "CLI-1", "--type", "preauth")
    assert created.exit_code == 0, created.output
    assert run(*base, "sandbox", "approve", "CLI-1").exit_code == 0
    cap = run(*base, "capture", "CLI-1", "--amount", "15.00")
    assert cap.exit_code == 0, cap.output
    over = run(*base, "capture", "CLI-1", "--amount", "30.00")
    assert over.exit_code == ExitCode.DECLINED, over.output
    refund = run(*base, "refund", "CLI-1", "--amount", "5.00", "--yes")
    assert refund.exit_code == 0, refund.output
    ledger = httpx.get(live_sandbox.url + "/_sandbox/ledger").json()["transactions"]
    assert [(t["kind"], t["amount"]) for t in ledger] == [
        ("preauth", "40.00"), ("capture", "15.00"), ("refund", "5.00")]


@pytest.mark.slow
def test_demo_runs_the_whole_scenario(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-m", "walletctl", "sandbox", "demo"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for expected in ("$ walletctl -p demo -o table checkout", "sandbox approve", "capture",
                     "refund", "reverse", "lookup", "# sandbox stopped"):
        assert expected in out, out
    assert "CapturedByProvider" in out
    assert "ReversedByProvider" in out
    assert "sandbox-api-key" not in out  # the key is never shown
    assert "\n7 entries\n" in out, out  # its history step: 3 checkouts, 2 captures, ...
    assert not (tmp_path / "data" / "walletctl").exists()  # the user's own history untouched
    assert not [line for line in out.splitlines() if line.endswith(" ")]  # piped: no padding


def test_demo_names_the_failing_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from io import StringIO

    from walletctl.sandbox import scenario

    real = scenario.demo_steps

    def broken(stamp: str) -> list[tuple[str, list[str]]]:
        steps = real(stamp)
        steps[4] = ("capture part", ["-p", "demo", "capture", "NO-SUCH-REF"])
        return steps[:6]

    monkeypatch.setattr(scenario, "demo_steps", broken)
    out = StringIO()
    failed = scenario.run_demo(out)
    assert failed == "capture part", out.getvalue()
    assert "# step 'capture part' failed" in out.getvalue()
    assert "capture the rest" not in out.getvalue()




def test_real_cli_sees_provider_refusals_and_declines(live_sandbox: EmbeddedSandbox,
                                                      sandbox_profile_file: Path) -> None:
    base = ["--config", str(sandbox_profile_file), "-p", "sandbox", "-o", "json"]
    # magic ..02: approved, then the provider refuses the capture (only the server knows)
    assert run(*base, "checkout", "--amount", "12.02", "--currency", "EUR", "--ref", "MAG-02",
               "--type", "preauth").exit_code == 0
    assert run(*base, "sandbox", "approve", "MAG-02").exit_code == 0
    refused = run(*base, "capture", "MAG-02", "--amount", "5.00")
    assert refused.exit_code == ExitCode.DECLINED, refused.output
    assert "refused" in refused.stderr.lower()
    # a declined checkout cannot be followed up
    assert run(*base, "checkout", "--amount", "10.00", "--currency", "EUR", "--ref", "DEC-1",
               "--type", "preauth").exit_code == 0
    assert run(*base, "sandbox", "decline", "DEC-1").exit_code == 0
    after = run(*base, "capture", "DEC-1")
    assert after.exit_code == ExitCode.DECLINED, after.output
    states = {t["reference"]: t["state"]
              for t in httpx.get(live_sandbox.url + "/_sandbox/ledger").json()["transactions"]}
    assert states["DEC-1"] == "Declined"
    assert "Errored" in states.values()  # the refused capture is on record


def test_serve_refuses_an_unusable_db(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db.sqlite"
    bad.write_text("this is not SQLite " * 100)
    result = run("sandbox", "serve", "--db", str(bad))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--db" in result.stderr
    assert "not a database" in result.stderr
