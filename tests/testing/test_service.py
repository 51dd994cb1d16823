"""``walletctl sandbox serve`` as a CI service: --ready-file, ``sandbox wait``, SIGTERM.

Everything runs as real processes on real ports, the way a CI runner starts them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .helpers import WALLETCTL, wait_for_file, walletctl


def test_ready_file_holds_the_url_once_it_answers(
        service: tuple[subprocess.Popen[str], Path]) -> None:
    proc, ready = service
    text = wait_for_file(ready, proc)
    assert text.endswith("\n"), repr(text)
    assert text.count("\n") == 1, repr(text)
    url = text.strip()
    # Written only once requests are accepted: the very first request succeeds.
    health = httpx.get(url + "/_sandbox/health", timeout=5).json()
    assert health["status"] == "ok", health
    assert [p.name for p in ready.parent.iterdir()] == ["sandbox.url"]  # no temp file left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_stops_it_cleanly_and_removes_the_ready_file(
        service: tuple[subprocess.Popen[str], Path], sig: signal.Signals) -> None:
    proc, ready = service
    url = wait_for_file(ready, proc).strip()
    httpx.get(url + "/_sandbox/health", timeout=5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=10)  # a liveness bound, not a timing assertion
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "walletctl sandbox stopped" in out
    assert not ready.exists()


def test_sandbox_wait_ready(service: tuple[subprocess.Popen[str], Path]) -> None:
    proc, ready = service
    url = wait_for_file(ready, proc).strip()
    done = walletctl("-o", "json", "sandbox", "wait", url, "--timeout", "10")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["ready"] is True, record
    assert record["url"] == url, record
    text = walletctl("-o", "table", "sandbox", "wait", url)
    assert text.stdout.startswith(f"sandbox at {url} is ready"), text.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sandbox_wait_times_out_with_exit_7() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = walletctl("sandbox", "wait", url, "--timeout", "0.5")
    assert done.returncode == 7, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"walletctl: error: the sandbox at {url} was not ready after"), lines
    assert lines[1].startswith("hint:"), lines
    assert "Traceback" not in done.stderr


def test_sandbox_wait_waits_for_a_late_start(tmp_path: Path) -> None:
    port = free_port()
    waiter = subprocess.Popen([*WALLETCTL, "sandbox", "wait", f"http://127.0.0.1:{port}",
                               "--timeout", "60"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert waiter.poll() is None  # still waiting: nothing listens yet
    server = subprocess.Popen([*WALLETCTL, "sandbox", "serve", "--port", str(port), "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_sandbox_wait_refuses_a_bad_url() -> None:
    done = walletctl("sandbox", "wait", "localhost:8765", "--timeout", "1")
    assert done.returncode == 7, done.stderr
    assert "must start with http:// or https://" in done.stderr


def test_port_in_use_is_one_line_with_a_hint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = walletctl("sandbox", "serve", "--port", str(port), "--quiet", process=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"walletctl: error: cannot listen on 127.0.0.1:{port}")
    assert "--port 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_unusable_ready_file_is_refused_before_serving(tmp_path: Path) -> None:
    done = walletctl("sandbox", "serve", "--port", "0", "--ready-file",
                     str(tmp_path / "missing" / "url"), process=True)
    assert done.returncode == 2, done.stderr
    assert "--ready-file" in done.stderr
    assert "does not exist" in done.stderr


def test_the_plugin_is_not_imported_by_the_cli() -> None:
    """The pytest plugin costs `walletctl --help` nothing: neither it nor pytest is loaded."""
    code = ("import runpy, sys\nsys.argv = ['walletctl', '--help']\n"
            "try:\n    runpy.run_module('walletctl', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pytest', '_pytest', "
            "'walletctl.testing'))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False, env=dict(os.environ, COLUMNS="100"))
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_the_plugin_module_is_light() -> None:
    """Importing the plugin (what pytest does at start-up) loads no server, httpx or pydantic."""
    code = ("import sys, walletctl.testing\n"
            "heavy = [m for m in ('httpx', 'pydantic', 'fastapi', 'uvicorn', "
            "'walletctl.sandbox.app') if m in sys.modules]\nprint(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
