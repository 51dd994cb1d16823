"""smoke tells the truth before and after it runs (issue 46, item 2): output paths are proven
writable before the first request, an unreachable gateway is the connection code, a failed
step's hint names what that step needs, and a profile can name the sandbox admin token's
variable so approve steps work against a sandbox that has one."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

from .conftest import API_KEY, SERVICE_SECRET, ProfileFactory

ADMIN_TOKEN = "smoke-admin-token-4Rt9"
TOKEN_ENV = "WALLETCTL_H46_SANDBOX_ADMIN"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def guarded() -> Iterator[EmbeddedSandbox]:
    config = SandboxConfig(api_key=API_KEY, service_secret=SERVICE_SECRET, quiet=True,
                           admin_token=ADMIN_TOKEN)
    with EmbeddedSandbox(config) as sb:
        yield sb


def smoke_refs(url: str, prefix: str) -> list[str]:
    r = httpx.get(url + "/_sandbox/ledger", timeout=10, headers={"X-Sandbox-Token": ADMIN_TOKEN})
    assert r.status_code == 200, r.text
    return [json.dumps(t) for t in r.json()["transactions"] if f'"{prefix}' in json.dumps(t)]


def test_an_unwritable_report_path_fails_before_any_request(
    guarded: EmbeddedSandbox, write_profile: ProfileFactory, tmp_path: Path
) -> None:
    config = write_profile(guarded.url)
    # a directory even root cannot create a file in: os.access says yes, open says no
    for flag in ("--junit", "--json-file"):
        result = invoke("--config", str(config), "smoke", "-s", "redirect-sale",
                        "--ref-prefix", "unw", flag, "/proc/walletctl-h46-smoke.out")
        assert result.exit_code in (ExitCode.USAGE, ExitCode.VALIDATION), result.output
        assert flag in result.stderr
        assert "Traceback" not in result.output
    assert smoke_refs(guarded.url, "unw-") == []


def test_an_unreachable_gateway_exits_with_the_connection_code(
    write_profile: ProfileFactory, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = write_profile(f"http://127.0.0.1:{port}")
    report = tmp_path / "r.json"
    result = invoke("--config", str(config), "smoke", "--json-file", str(report))
    assert result.exit_code == ExitCode.NETWORK, result.output
    assert "could not connect" in result.stderr.lower() or "unreachable" in result.stderr
    doc = json.loads(report.read_text())
    assert doc["exit_code"] == ExitCode.NETWORK


def test_a_failed_approve_names_what_it_needs_and_the_token_env_makes_it_pass(
    guarded: EmbeddedSandbox, write_profile: ProfileFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WALLETCTL_SANDBOX_TOKEN", raising=False)
    config = write_profile(guarded.url)
    report = tmp_path / "r.json"
    result = invoke("--config", str(config), "smoke", "-s", "redirect-sale",
                    "--json-file", str(report))
    assert result.exit_code == ExitCode.SMOKE_FAILED, result.output
    hint = next(line for line in result.stderr.splitlines() if line.startswith("hint:"))
    assert "approve" in hint, hint
    assert "sandbox_admin_token_env" in hint, hint
    assert "profile check` lists what each scenario needs" not in hint
    step = json.loads(report.read_text())["scenarios"][0]["steps"][1]
    assert step["status"] == "failed"
    assert "sandbox_admin_token_env" in step["needs"], step

    text = config.read_text() + f'sandbox_admin_token_env = "{TOKEN_ENV}"\n'
    config.write_text(text)
    monkeypatch.setenv(TOKEN_ENV, ADMIN_TOKEN)
    result = invoke("--config", str(config), "smoke", "-s", "redirect-sale",
                    "-s", "preauth-reversal", "--json-file", str(report))
    assert result.exit_code == ExitCode.OK, result.output
    for out in (result.stdout, result.stderr, report.read_text()):
        assert ADMIN_TOKEN not in out


def test_a_token_variable_named_but_unset_is_a_profile_problem(
    guarded: EmbeddedSandbox, write_profile: ProfileFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_profile(guarded.url)
    config.write_text(config.read_text() + f'sandbox_admin_token_env = "{TOKEN_ENV}"\n')
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    result = invoke("--config", str(config), "smoke", "-s", "redirect-sale",
                    "--ref-prefix", "unset")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert TOKEN_ENV in result.stderr
    assert smoke_refs(guarded.url, "unset-") == []
