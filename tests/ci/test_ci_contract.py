"""The CI contract (issue 46, item 4; docs/ci.md): a whole profile from the environment with no
file, --no-input (a real terminal: a pty), --log-format json. Against a sandbox on a real port;
in-process where no terminal is the point."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from sandbox_fixtures import make_checkout_body
from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

API_KEY = "ci-contract-key-Zx81Qp"
MERCHANT, STORE = "M-CI", "S-CI"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[str]:
    with EmbeddedSandbox(SandboxConfig(api_key=API_KEY, quiet=True)) as sb:
        yield sb.url


def approved(url: str, ref: str, kind: str = "ecom.sale") -> None:
    body = make_checkout_body(ref, "1000", kind, merchantId=MERCHANT, storeId=STORE)
    r = httpx.post(url + "/api/v5/checkout", json=body,
                   headers={"Authorization": f"PublicApiKey {API_KEY}"})
    assert r.status_code == 200, r.text
    r = httpx.post(f"{url}/_sandbox/checkouts/{ref}/approve")
    assert r.status_code == 200, r.text


def followups(url: str, ref: str) -> list[dict[str, Any]]:
    rows = httpx.get(url + "/_sandbox/ledger").json()["transactions"]
    return [r for r in rows if r.get("invoiceReference") == ref]


def ci_env(tmp: Path, url: str, **extra: str | None) -> dict[str, str | None]:
    """Nothing but variables: no profiles file exists anywhere (HOME and XDG in tmp)."""
    return {"HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "cfg"),
            "XDG_DATA_HOME": str(tmp / "data"), "WALLETCTL_CONFIG": None,
            "WALLETCTL_PROFILE": None, "WALLETCTL_BASE_URL": url,
            "WALLETCTL_MERCHANT_ID": MERCHANT, "WALLETCTL_STORE_ID": STORE,
            "WALLETCTL_API_KEY": API_KEY, "WALLETCTL_CURRENCY": "EUR",
            "WALLETCTL_NO_INPUT": None, "WALLETCTL_LOG_FORMAT": None, **extra}


def invoke(env: dict[str, str | None], *args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def test_a_profile_from_the_environment_alone(tmp_path: Path, sandbox: str) -> None:
    approved(sandbox, "CI-ENV-1")
    env = ci_env(tmp_path, sandbox)
    result = invoke(env, "-v", "-o", "json", "lookup", "CI-ENV-1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["state"] == "Approved"
    result = invoke(env, "-v", "refund", "CI-ENV-1", "--amount", "1.00", "--yes")
    assert result.exit_code == 0, result.output
    assert len(followups(sandbox, "CI-ENV-1")) == 1
    shown = invoke(env, "-o", "json", "profile", "show")
    for out in (result.stdout, result.stderr, shown.stdout, shown.stderr):
        assert API_KEY not in out
    assert not (tmp_path / "cfg").exists()  # no file was written or needed


def test_an_incomplete_or_bad_environment_names_the_variable(tmp_path: Path,
                                                            sandbox: str) -> None:
    result = invoke(ci_env(tmp_path, sandbox, WALLETCTL_MERCHANT_ID=None), "lookup", "X-1")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "WALLETCTL_MERCHANT_ID" in result.stderr
    result = invoke(ci_env(tmp_path, sandbox, WALLETCTL_TIMEOUT="soon"), "lookup", "X-1")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "WALLETCTL_TIMEOUT" in result.stderr
    result = invoke(ci_env(tmp_path, "ftp://nowhere"), "lookup", "X-1")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "WALLETCTL_BASE_URL" in result.stderr


def test_a_named_profile_or_file_wins_over_the_environment(tmp_path: Path,
                                                           sandbox: str) -> None:
    config = tmp_path / "p.toml"
    config.write_text('[profiles.other]\nbase_url = "http://127.0.0.1:9"\nmerchant_id = "M"\n'
                      'store_id = "S"\nuser_id = "u"\n[profiles.other.auth]\nscheme = "none"\n')
    config.chmod(0o600)
    env = ci_env(tmp_path, sandbox)
    result = invoke(env, "--config", str(config), "-o", "json", "profile", "show")
    assert result.exit_code == 0, result.output
    assert "127.0.0.1:9" in result.stdout


def test_log_format_json_makes_every_stderr_line_an_object(tmp_path: Path,
                                                           sandbox: str) -> None:
    approved(sandbox, "CI-LOG-1", "ecom.preAuthorisation")
    rows = tmp_path / "rows.csv"
    rows.write_text("ref,amount\nCI-LOG-1,1.00\nCI-LOG-1,1.001\n")
    env = ci_env(tmp_path, sandbox)
    for args, code in ((["--log-format", "json", "capture", "--batch", str(rows),
                         "--skip-invalid"], ExitCode.VALIDATION),
                       (["lookup", "bad ref\x1b"], ExitCode.VALIDATION),
                       (["--log-format=json", "lookup", "--nope"], ExitCode.USAGE)):
        result = invoke({**env, "WALLETCTL_LOG_FORMAT": "json" if "lookup" in args[:1]
                         else None}, *args)
        assert result.exit_code == code, result.output
        lines = [json.loads(line) for line in result.stderr.splitlines()]
        assert lines, result.stderr
        assert all(isinstance(x, dict) and "level" in x for x in lines), result.stderr
        errors = [x for x in lines if x["level"] == "error"]
        if code != ExitCode.VALIDATION or "lookup" in args:
            assert errors[-1]["code"] == code, lines
        assert API_KEY not in result.stderr
    events = [json.loads(line) for line in invoke(
        env, "--log-format", "json", "capture", "--batch", str(rows), "--skip-invalid",
        "--resume").stderr.splitlines()]
    assert any(e.get("event") == "batch.progress" or "invalid" in e.get("message", "")
               for e in events), events


def test_smoke_progress_is_json_events(tmp_path: Path) -> None:
    result = invoke({"WALLETCTL_LOG_FORMAT": "json"}, "smoke", "--embedded", "-s",
                    "redirect-sale")
    assert result.exit_code == 0, result.output
    steps = [json.loads(line) for line in result.stderr.splitlines()]
    assert [s["step"] for s in steps if s.get("event") == "smoke.step"] == [
        "checkout", "approve", "lookup approved"]
    assert steps[-1]["counts"]["passed"] == 3 or any(
        s.get("counts", {}).get("passed") == 3 for s in steps)


def _on_terminal(args: list[str], env: dict[str, str | None], typed: str = "y\n",
                 timeout: float = 60) -> tuple[int, str]:
    """walletctl ARGS with a pty as stdin (and stderr, where prompts go); ``typed`` typed."""
    full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "walletctl", *args], stdin=slave,
                                stdout=subprocess.PIPE, stderr=slave, env=full)
        os.close(slave)
        slave = -1
        os.write(master, typed.encode())
        seen = b""
        try:
            proc.wait(timeout=timeout)
        finally:
            proc.kill()
        import select

        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        return proc.returncode, seen.decode("utf-8", "replace")
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_input_refuses_every_prompt_on_a_terminal(tmp_path: Path, sandbox: str,
                                                     how: str) -> None:
    ref = f"CI-NI-{how}"
    approved(sandbox, ref)
    env = ci_env(tmp_path, sandbox, WALLETCTL_NO_INPUT="1" if how == "env" else None)
    args = (["--no-input"] if how == "flag" else []) + ["refund", ref, "--amount", "1.00"]
    code, seen = _on_terminal(args, env)
    assert code == ExitCode.USAGE, seen
    assert "--no-input" in seen
    assert followups(sandbox, ref) == []  # nothing sent
    # the same on a terminal without it asks, and "y" sends it: the pty is a real terminal
    code, seen = _on_terminal(["refund", ref, "--amount", "1.00"],
                              ci_env(tmp_path, sandbox))
    assert code == 0, seen
    assert "Proceed" in seen
    assert len(followups(sandbox, ref)) == 1
