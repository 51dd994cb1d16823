"""A profile whose gateway (or sandbox) is not running, as a newcomer meets it: walletctl
(in-process) against a port nobody listens on."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from pathlib import Path

import pytest

from cli_runner import run_walletctl
from first_hour_fixtures import WALLETCTL, walletctl_env
from walletctl.constants import ExitCode
from walletctl.sandbox.scenario import profile_toml

KEY_ENV = "WALLETCTL_TEST_DOWN_KEY"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def down(tmp_path: Path) -> tuple[dict[str, str], int]:
    """A profile ``shop`` pointing at a closed loopback port; (environment, that port)."""
    port = _free_port()
    config = tmp_path / "profiles.toml"
    config.write_text(profile_toml(f"http://127.0.0.1:{port}", name="shop", key_env=KEY_ENV,
                                   merchant_id="M-1001", store_id="S-01", user_id="ops",
                                   timeout=5))
    os.chmod(config, 0o600)
    env = walletctl_env(config, **{KEY_ENV: "tk-down-1234",
                                   "WALLETCTL_AUDIT_LOG": str(tmp_path / "h.sqlite3")})
    return env, port


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return run_walletctl(argv, env=env)  # in-process (tests/cli_runner.py)


def test_profile_check_online_with_the_gateway_down_exits_network(
        down: tuple[dict[str, str], int]) -> None:
    env, _ = down
    proc = _run(env, "-p", "shop", "-o", "table", "profile", "check", "--online")
    assert proc.returncode == ExitCode.NETWORK, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("walletctl: error: profile check failed: could not connect"), lines
    assert len(lines) <= 2, lines  # the error, and its hint


def test_the_hint_for_a_stopped_sandbox_starts_one_the_profile_reaches(
        down: tuple[dict[str, str], int]) -> None:
    env, port = down
    stopped = _run(env, "-p", "shop", "sandbox", "approve", "ORDER-DOWN-1")
    assert stopped.returncode == ExitCode.NETWORK, (stopped.returncode, stopped.stderr)
    hint = stopped.stderr.splitlines()[-1]
    assert f"--port {port}" in hint, hint
    argv = shlex.split(hint.split("`")[1])
    assert argv[:3] == ["walletctl", "sandbox", "serve"], argv
    server = subprocess.Popen([*WALLETCTL, *argv[1:], "--quiet"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    try:  # the hinted command, as typed: the profile's URL now answers
        ready = _run(env, "sandbox", "wait", f"http://127.0.0.1:{port}", "--timeout", "30")
        assert ready.returncode == ExitCode.OK, ready.stderr
        again = _run(env, "-p", "shop", "sandbox", "approve", "ORDER-DOWN-1")
        assert again.returncode not in (ExitCode.NETWORK, ExitCode.ERROR), again.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_sandbox_wait_hints_the_port_it_waits_on(down: tuple[dict[str, str], int]) -> None:
    env, port = down
    proc = _run(env, "sandbox", "wait", f"http://127.0.0.1:{port}", "--timeout", "0.2")
    assert proc.returncode != ExitCode.OK
    assert f"`walletctl sandbox serve --port {port} --ready-file PATH`" in proc.stderr, \
        proc.stderr
