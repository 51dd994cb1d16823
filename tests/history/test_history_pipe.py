"""`walletctl history | head -1` on the default (SQLite) history: a closed stdout ends the
listing quietly (status 141, nothing on stderr), as it does for every other command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from walletctl.constants import ExitCode
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent


def test_history_on_a_pipe_closed_after_one_line_is_quiet(tmp_path: Path) -> None:
    history = tmp_path / "audit" / "history.sqlite3"
    with SqliteHistory(history) as store:  # a few hundred entries: more than a pipe holds
        store.begin_many(Intent(time=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                                os_user="ops", host="desk", profile="shop",
                                base_url="http://127.0.0.1:8765", operation="capture",
                                original_ref=f"ORDER-PIPE-{i}", amount="1.00", currency="EUR",
                                merchant_id="M-1001", store_id="S-01",
                                reason="a reason long enough to fill the pipe " * 4)
                         for i in range(400))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update({"WALLETCTL_CONFIG": str(tmp_path / "profiles.toml"),
                "WALLETCTL_AUDIT_LOG": str(history), "NO_COLOR": "1"})
    for _ in range(2):  # the traceback came every time; twice shows it is not a fluke
        proc = subprocess.Popen([sys.executable, "-m", "walletctl", "history", "-o", "ndjson"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env)
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        stderr = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
        assert b"ORDER-PIPE-" in first, first
        assert code == ExitCode.CLOSED_PIPE, (code, stderr)
        assert stderr == "", stderr
