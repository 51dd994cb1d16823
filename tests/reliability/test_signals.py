"""SIGTERM and SIGHUP behave exactly like Ctrl-C (issue 9, item 2): a real walletctl process
against the sandbox on a real port with injected latency, signalled while its request is in
flight."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.constants import ExitCode

from .conftest import cli_env, write_profile

SANDBOX_KEY = "sandbox-api-key"


def approved_preauth(url: str, ref: str) -> None:
    from sandbox_fixtures import make_checkout_body

    headers = {"Authorization": f"PublicApiKey {SANDBOX_KEY}"}
    body = make_checkout_body(ref, "5000", "ecom.preAuthorisation")
    assert httpx.post(f"{url}/api/v5/checkout", json=body, headers=headers).status_code == 200
    assert httpx.post(f"{url}/_sandbox/checkouts/{ref}/approve").status_code == 200


def set_latency(url: str, ms: int) -> None:
    assert httpx.post(f"{url}/_sandbox/faults", json={"latency": ms}).status_code == 200


def signal_mid_request(config: Path, args: list[str], method: str, sig: int) -> tuple[int, str]:
    """Start walletctl -v ARGS; once it traced sending ``method``, signal it."""
    env = cli_env(config, key=SANDBOX_KEY)
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", "-v", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = []
    for raw in proc.stderr:
        line = raw.decode()
        seen.append(line)
        if line.startswith(f"> {method} "):
            break
    else:
        proc.wait(30)
        pytest.fail(f"never sent a {method}: {''.join(seen)}")
    time.sleep(0.4)  # the request is on the wire; the sandbox holds the answer (latency)
    proc.send_signal(sig)
    rest = proc.stderr.read().decode()
    proc.wait(30)
    return proc.returncode, "".join(seen) + rest


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_during_a_capture_is_an_unknown_outcome(
    live_sandbox: Any, tmp_path: Path, sig: int
) -> None:
    approved_preauth(live_sandbox.url, "SIG-1")
    set_latency(live_sandbox.url, 2500)
    config = write_profile(tmp_path, live_sandbox.url, timeout=10)
    code, err = signal_mid_request(config, ["capture", "SIG-1", "--amount", "10"], "POST", sig)
    assert code == ExitCode.UNKNOWN_OUTCOME, err
    assert "unknown outcome for SIG-1-CAP1 (interrupted while waiting for the answer)" in err
    assert "walletctl lookup SIG-1-CAP1" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=["SIGTERM"])  # SIGHUP: same handler
def test_signal_during_a_lookup_exits_130(live_sandbox: Any, tmp_path: Path, sig: int) -> None:
    approved_preauth(live_sandbox.url, "SIG-2")
    set_latency(live_sandbox.url, 2500)
    config = write_profile(tmp_path, live_sandbox.url, timeout=10)
    code, err = signal_mid_request(config, ["lookup", "SIG-2"], "GET", sig)
    assert code == ExitCode.INTERRUPTED, err
    assert "walletctl: error: interrupted" in err
    assert "Traceback" not in err
