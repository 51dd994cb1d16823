"""The README's own sandbox keeps its ledger (issue 46, item 6): `sandbox serve --write-profile
NAME` without --db keeps its ledger in a file in the user's state directory, so after a
restart the profile's lookups still find what was made. Real processes: the restart is the
point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _serve(env: dict[str, str], root: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = root / "ready"
    ready.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", "sandbox", "serve", "--port",
                             "0", "--quiet", "--ready-file", str(ready), "--write-profile",
                             "sbx"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def _stop(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    return err.decode()


def test_a_restarted_sandbox_still_knows_what_its_profile_made(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"),
               WALLETCTL_CONFIG=str(tmp_path / "profiles.toml"),
               WALLETCTL_AUDIT_LOG=str(tmp_path / "history.db"))

    def walletctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "walletctl", "-p", "sbx", *args],
                              env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    proc, url = _serve(env, tmp_path)
    try:
        done = walletctl("checkout", "--amount", "40", "--currency", "EUR", "--ref",
                         "KEEP-1", "--type", "preauth")
        assert done.returncode == 0, done.stderr
    finally:
        note = _stop(proc)
    db = tmp_path / "state" / "walletctl" / "sandbox" / "sbx.sqlite3"
    assert db.is_file(), note
    assert str(db) in note  # the profile's note says where the ledger is
    proc, url = _serve(env, tmp_path)
    try:
        found = walletctl("-o", "json", "lookup", "KEEP-1")
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["state"] in ("Pending", "Approved", "Created"), \
            found.stdout
        assert httpx.get(url + "/_sandbox/health", timeout=10).status_code == 200
    finally:
        _stop(proc)


def test_a_lookup_on_a_sandbox_that_forgot_says_so(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"), SHOP_KEY=
               "sandbox-api-key", WALLETCTL_CONFIG=str(tmp_path / "profiles.toml"),
               WALLETCTL_AUDIT_LOG=str(tmp_path / "history.db"))

    def walletctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "walletctl", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    def serve() -> subprocess.Popen[bytes]:  # in memory, on the same port each time
        ready = tmp_path / "ready"
        ready.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-m", "walletctl", "sandbox", "serve",
                                 "--port", str(port), "--quiet", "--ready-file", str(ready)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        return proc

    proc = serve()
    try:
        added = walletctl("profile", "add", "mem", "--base-url", f"http://127.0.0.1:{port}",
                          "--merchant-id", "M-1001", "--store-id", "S-01", "--user-id",
                          "ops-bot", "--currency", "EUR", "--key-env", "SHOP_KEY",
                          "--redirect-base", "https://shop.example")
        assert added.returncode == 0, added.stderr
        made = walletctl("-p", "mem", "checkout", "--amount", "5", "--ref", "FORGOT-1")
        assert made.returncode == 0, made.stderr
        time.sleep(1.1)  # the next sandbox starts in a later second
    finally:
        _stop(proc)
    proc = serve()
    try:
        gone = walletctl("-p", "mem", "lookup", "FORGOT-1")
        never = walletctl("-p", "mem", "lookup", "NEVER-1")
    finally:
        _stop(proc)
    assert gone.returncode not in (0, 1), gone.stderr
    assert "forgot" in gone.stderr, gone.stderr
    assert "--db" in gone.stderr, gone.stderr
    assert "forgot" not in never.stderr, never.stderr  # a reference never used: the old hint
