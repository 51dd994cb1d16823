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
