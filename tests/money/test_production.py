"""Production profiles (issue 24), from the outside: ``python -m walletctl`` subprocesses
against a served sandbox, the production profile made ONLY with ``walletctl profile add ...
--environment production`` (it points at the desk's proxy, so "production" here is the
sandbox: what the tests check is what walletctl lets through, and the gateway's own view).

- a batch against a production profile needs the profile's name: typed on a terminal (a
  real pty), ``--confirm-profile NAME`` without one (``--yes`` does not replace it); refused,
  nothing reaches the gateway, the history is unchanged and no journal is left;
- the sandbox's admin commands and ``smoke --embedded`` refuse a production profile;
- confirmation lines, results and batch summaries say PRODUCTION at COLUMNS=80, NO_COLOR.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import tomllib
from pathlib import Path

import httpx
import pytest

from walletctl.constants import ExitCode

from .conftest import KEY_ENV, WALLETCTL, Desk, Result, unique

PROD = "live-eu"


@pytest.fixture
def prod(desk: Desk) -> Desk:
    """The desk with ``live-eu``: a production profile made by ``walletctl profile add``."""
    base = desk.proxy.port
    desk.run("profile", "add", PROD, "--base-url", f"http://127.0.0.1:{base}",
             "--merchant-id", desk.merchant_id, "--store-id", desk.store_id,
             "--user-id", "ops-bot", "--currency", "EUR", "--key-env", KEY_ENV,
             "--redirect-base", "https://shop.example", "--environment", "production",
             expect=0)
    return desk


def on_terminal(desk: Desk, *argv: str, typed: str, timeout: float = 60) -> Result:
    """``walletctl ARGV`` with a real terminal (a pty) as stdin, ``typed`` typed into it;
    stdout and stderr piped (the prompt is on stderr)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*WALLETCTL, *argv], stdin=slave, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=desk.env)
        os.close(slave)
        slave = -1
        os.write(master, typed.encode())
        result = Desk.finish(proc, argv, timeout)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert "Traceback" not in result.stderr, result
    return result


def batch_file(desk: Desk, *refs: str, amount: str = "2.00") -> Path:
    path = desk.tmp / f"{unique('rows')}.csv"
    path.write_text("ref,amount\n" + "".join(f"{ref},{amount}\n" for ref in refs))
    return path


def journals(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".*journal*"))


def error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("walletctl: error")]


# --------------------------------------------------------------------------- the profile


def test_profile_add_makes_a_production_profile_and_check_shows_it(prod: Desk) -> None:
    config = Path(prod.env["WALLETCTL_CONFIG"])
    profiles = tomllib.loads(config.read_text())["profiles"]
    assert profiles[PROD]["environment"] == "production"
    assert profiles["sbx"]["environment"] == "test"  # what `sandbox serve --write-profile` wrote
    checks = {r["check"]: r for r in prod.run("-o", "json", "profile", "check", PROD,
                                              expect=0).json()}
    assert checks["environment"]["detail"] == "production"
    table = prod.run("-o", "table", "profile", "check", PROD, expect=0).stdout
    assert f"ok   {PROD}: environment: production" in table
    assert "PRODUCTION: confirmations say so" in table
    assert f"--confirm-profile {PROD}" in table
    listed = {r["name"]: r["environment"]
              for r in prod.run("-o", "json", "profile", "list", expect=0).json()}
    assert listed == {"sbx": "test", "desk-a": "test", "desk-b": "test", PROD: "production"}
    assert "production" in prod.run("-o", "table", "profile", "list", expect=0).stdout


def test_an_unknown_environment_is_one_config_error(prod: Desk) -> None:
    config = Path(prod.env["WALLETCTL_CONFIG"])
    config.write_text(config.read_text().replace('environment = "production"',
                                                 'environment = "prod"'))
    result = prod.run("-p", PROD, "profile", "show", expect=ExitCode.CONFIG)
    assert error_lines(result) == [
        f"walletctl: error: profiles.{PROD} -> environment: must be 'production' or 'test', "
        "not 'prod'"]
    flag = prod.run("profile", "add", "x", "--base-url", "https://gw.example", "--merchant-id",
                    "m", "--store-id", "s", "--user-id", "u", "--currency", "EUR",
                    "--environment", "staging", expect=ExitCode.USAGE,
                    env={"WALLETCTL_CONFIG": str(prod.tmp / "other.toml")})
    assert "--environment: must be 'production' or 'test', not 'staging'" in flag.stderr


# --------------------------------------------------------------------------- batches


@pytest.mark.parametrize("extra", [[], ["--confirm-profile", "live-us"],
                                   ["--confirm-profile", "sbx"], ["--confirm-profile", "LIVE-EU"]],
                         ids=["missing", "other-name", "a-test-profile", "wrong-case"])
def test_a_batch_without_the_right_name_in_a_pipe_is_refused(prod: Desk,
                                                              extra: list[str]) -> None:
    refs = [prod.sale(unique("PRODB")), prod.sale(unique("PRODB"))]
    rows = batch_file(prod, *refs)
    before = prod.history()
    result = prod.run("-p", PROD, "refund", "--batch", str(rows), "--yes", *extra,
                      expect=ExitCode.USAGE)  # --yes does not replace the name
    [line] = error_lines(result)
    assert "--confirm-profile" in line, result
    assert line.endswith("nothing was sent"), result
    assert f"--confirm-profile {PROD}" in result.stderr  # what to do
    assert result.stdout == ""
    assert prod.proxy.requests == []  # not even a lookup reached the gateway
    for ref in refs:
        assert prod.followups(ref, "refund") == [], ref
    assert prod.history() == before
    assert journals(rows) == []


def test_a_batch_with_the_right_name_runs_and_its_summary_says_production(prod: Desk) -> None:
    refs = [prod.sale(unique("PRODB")) for _ in range(3)]
    rows = batch_file(prod, *refs)
    result = prod.run("-p", PROD, "-o", "table", "refund", "--batch", str(rows), "--yes",
                      "--confirm-profile", PROD, expect=0)
    assert result.stdout.startswith(f"PRODUCTION: refund batch against production profile "
                                    f"{PROD}\n"), result
    assert "PRODUCTION refund batch" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result
    for ref in refs:
        assert [r["state"] for r in prod.followups(ref, "refund")] == ["Approved"], ref
    assert sum(e["operation"] == "refund" for e in prod.history()) >= 3


def test_a_json_batch_summary_names_the_environment(prod: Desk) -> None:
    ref = prod.preauth(unique("PRODC"))
    rows = batch_file(prod, ref, amount="5.00")
    summary = prod.run("-p", PROD, "-o", "json", "capture", "--batch", str(rows),
                       "--confirm-profile", PROD, expect=0).json()
    assert (summary["environment"], summary["production_profiles"]) == ("production", [PROD])
    assert summary["confirmed"] == 1
    test = prod.run("-p", "sbx", "-o", "json", "capture", "--batch",
                    str(batch_file(prod, prod.preauth(unique("TESTC")))), expect=0).json()
    assert test["environment"] == "test"


def test_a_row_naming_a_production_profile_needs_its_name(prod: Desk) -> None:
    ref = prod.sale(unique("PRODR"))
    rows = prod.tmp / "mixed.csv"
    rows.write_text(f"ref,amount,profile\n{ref},1.00,{PROD}\n")
    refused = prod.run("-p", "sbx", "refund", "--batch", str(rows), "--yes",
                       expect=ExitCode.USAGE)
    assert f"without --confirm-profile {PROD}" in refused.stderr
    assert prod.followups(ref, "refund") == []
    assert journals(rows) == []
    prod.run("-p", "sbx", "refund", "--batch", str(rows), "--yes", "--confirm-profile", PROD,
             expect=0)
    assert len(prod.followups(ref, "refund")) == 1


def test_a_dry_run_needs_no_name(prod: Desk) -> None:
    rows = batch_file(prod, prod.sale(unique("PRODD")))
    result = prod.run("-p", PROD, "-o", "table", "refund", "--batch", str(rows), "--dry-run",
                      expect=0)
    assert "PRODUCTION dry run" in result.stdout


def test_on_a_terminal_the_typed_name_is_asked_and_accepted(prod: Desk) -> None:
    ref = prod.preauth(unique("PRODT"))
    rows = batch_file(prod, ref, amount="3.00")
    result = on_terminal(prod, "-p", PROD, "-o", "json", "capture", "--batch", str(rows),
                         typed=f"{PROD}\n")
    assert result.code == 0, result
    assert (f"PRODUCTION: type the profile's name ({PROD}) to capture 1 row(s) (3.00 EUR)"
            in result.stderr), result
    assert [r["state"] for r in prod.followups(ref, "capture")] == ["Approved"]


def test_on_a_terminal_a_refund_batch_asks_the_name_instead_of_y_n(prod: Desk) -> None:
    ref = prod.sale(unique("PRODT"))
    result = on_terminal(prod, "-p", PROD, "-o", "json", "refund", "--batch",
                         str(batch_file(prod, ref)), typed=f"{PROD}\n")
    assert result.code == 0, result
    assert "[y/N]" not in result.stderr
    assert len(prod.followups(ref, "refund")) == 1


@pytest.mark.parametrize("typed", ["live\n", "\n", "sbx\n"])
def test_on_a_terminal_a_wrong_name_is_refused(prod: Desk, typed: str) -> None:
    ref = prod.sale(unique("PRODW"))
    rows = batch_file(prod, ref)
    before = prod.history()
    result = on_terminal(prod, "-p", PROD, "refund", "--batch", str(rows), "--yes",
                         typed=typed)
    assert result.code == ExitCode.USAGE, result
    assert "does not match the production profile" in result.stderr
    assert prod.proxy.posts() == []
    assert prod.followups(ref, "refund") == []
    assert prod.history() == before
    assert journals(rows) == []


# --------------------------------------------------------------------------- single commands


def test_the_refund_confirmation_line_says_production(prod: Desk) -> None:
    ref = prod.sale(unique("PRODS"))
    declined = on_terminal(prod, "-p", PROD, "-o", "table", "refund", ref, "--amount", "1",
                           typed="n\n")
    assert declined.code == ExitCode.USAGE, declined
    [line] = [x for x in declined.stderr.splitlines() if "Refund of" in x]
    assert line.startswith("PRODUCTION: Refund of 1.00 EUR on "), line
    assert f"(profile {PROD}, http://127.0.0.1:" in line
    assert prod.followups(ref, "refund") == []
    done = on_terminal(prod, "-p", PROD, "-o", "table", "refund", ref, "--amount", "1",
                       typed="y\n")
    assert done.code == 0, done
    assert done.stdout.startswith(f"PRODUCTION: Refunded 1.00 EUR of {ref}"), done
    assert len(prod.followups(ref, "refund")) == 1


def test_ctrl_c_at_the_confirmation_prompt_is_an_interrupt_and_sends_nothing(
        prod: Desk) -> None:
    """Ctrl-C while the prompt waits exits 130 (interrupted), as everywhere else; Ctrl-D
    (end of input) is a "no" (exit 2)."""
    ref = prod.sale(unique("PRODC"))
    argv = ("-p", PROD, "refund", ref, "--amount", "1")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*WALLETCTL, *argv], stdin=slave, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=prod.env)
        os.close(slave)
        slave = -1
        assert proc.stderr is not None
        seen = b""
        while b"Proceed" not in seen:  # the prompt is on the screen: the user presses Ctrl-C
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, seen
            seen += chunk
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        rest = proc.stderr.read().decode()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert proc.returncode == ExitCode.INTERRUPTED, (proc.returncode, seen, rest)
    assert "Traceback" not in rest, rest
    assert prod.followups(ref, "refund") == []
    ended = on_terminal(prod, *argv, typed="\x04")
    assert ended.code == ExitCode.USAGE, ended
    assert "nothing was sent" in ended.stderr, ended


def test_capture_and_checkout_lines_say_production(prod: Desk) -> None:
    ref = prod.preauth(unique("PRODP"))
    captured = prod.run("-p", PROD, "-o", "table", "capture", ref, "--amount", "1", expect=0)
    assert captured.stdout.startswith("PRODUCTION: Captured 1.00 EUR"), captured
    created = prod.run("-p", PROD, "-o", "table", "checkout", "--amount", "2",
                       "--ref", unique("PRODK"), expect=0)
    assert created.stderr.startswith("PRODUCTION: Checkout "), created
    test = prod.run("-p", "sbx", "-o", "table", "capture", ref, "--amount", "2", expect=0)
    assert "PRODUCTION" not in test.stdout + test.stderr


def test_a_single_command_needs_no_name_but_a_wrong_one_is_refused(prod: Desk) -> None:
    ref = prod.sale(unique("PRODN"))
    prod.run("-p", PROD, "refund", ref, "--amount", "1", "--yes", expect=0)
    wrong = prod.run("-p", PROD, "refund", ref, "--amount", "1", "--yes",
                     "--confirm-profile", "sbx", expect=ExitCode.USAGE)
    assert "--confirm-profile 'sbx' does not match" in wrong.stderr
    assert len(prod.followups(ref, "refund")) == 1


# --------------------------------------------------------------------------- sandbox and smoke


def _ledger(desk: Desk) -> list[dict[str, object]]:
    data = httpx.get(f"{desk.sandbox_url}/_sandbox/ledger", timeout=10).json()
    rows = data.get("transactions", data) if isinstance(data, dict) else data
    assert isinstance(rows, list), data
    return rows


@pytest.mark.parametrize("argv", [["sandbox", "reset"], ["sandbox", "ledger"],
                                  ["sandbox", "decline", "REF"], ["sandbox", "cancel", "REF"]],
                         ids=["reset", "ledger", "decline", "cancel"])
def test_sandbox_admin_commands_refuse_a_production_profile(prod: Desk, argv: list[str]) -> None:
    ref = prod.checkout(unique("PRODA"), "4.00", approve=False)  # pending
    before = _ledger(prod)
    assert before
    argv = [ref if a == "REF" else a for a in argv]
    result = prod.run("-p", PROD, *argv, expect=ExitCode.USAGE)
    assert error_lines(result) == [
        f"walletctl: error: {' '.join(argv[:2])}: profile '{PROD}' is a production profile; "
        f"{' '.join(argv[:2])} only acts on a sandbox: nothing was sent"], result
    assert _ledger(prod) == before
    assert [r["state"] for r in prod.records(ref)] == ["Pending"]
    prod.run("-p", "sbx", *argv, expect=0)  # a test profile: as ever


def test_smoke_embedded_refuses_a_production_profile(prod: Desk) -> None:
    for argv in (["smoke", "--embedded", "-p", PROD], ["-p", PROD, "smoke", "--embedded"]):
        result = prod.run(*argv, expect=ExitCode.USAGE, timeout=30)
        assert error_lines(result) == [
            f"walletctl: error: smoke --embedded: profile '{PROD}' is a production profile; "
            "smoke --embedded only acts on a sandbox: nothing was sent"], result
    env_selected = prod.run("smoke", "--embedded", env={"WALLETCTL_PROFILE": PROD},
                            expect=ExitCode.USAGE)
    assert "is a production profile" in env_selected.stderr


def test_smoke_against_a_production_profile_needs_its_name(prod: Desk) -> None:
    before = _ledger(prod)
    result = prod.run("smoke", "-p", PROD, "-s", "redirect-sale", expect=ExitCode.USAGE)
    [line] = error_lines(result)
    assert f"without --confirm-profile {PROD}" in line
    assert "smoke" in line
    assert _ledger(prod) == before
    wrong = prod.run("smoke", "-p", PROD, "--confirm-profile", "sbx", expect=ExitCode.USAGE)
    assert "does not match the production profile" in wrong.stderr
    assert _ledger(prod) == before


def test_smoke_on_production_never_calls_the_sandbox_routes(prod: Desk) -> None:
    """Confirmed, the run goes ahead, but a production gateway is never sent a sandbox
    admin request: the redirect approval is left to a person (skipped with its reason)."""
    result = prod.run("-o", "json", "smoke", "-p", PROD, "--confirm-profile", PROD,
                      "-s", "redirect-sale", "--json", expect=0, timeout=120)
    report = json.loads(result.stdout)
    steps = [s for sc in report["scenarios"] for s in sc["steps"]]
    skipped = [s for s in steps if s["status"] == "skipped"]
    assert skipped, steps
    assert "production profile" in json.dumps(skipped[0]), steps
    paths = [r.path for r in prod.proxy.requests]
    assert "/api/v5/checkout" in paths, paths
    assert not [p for p in paths if p.startswith("/_sandbox/")], paths
