"""Reading a batch journal from outside the process that writes it (shared by tests/batch and
tests/reliability): what a test watches to send a signal at the right moment."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path


def confirmed_rows(journal: Path) -> int:
    """Rows the journal holds as confirmed, read-only; 0 while it cannot be read yet."""
    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1)
        try:
            (n,) = db.execute("SELECT count(*) FROM rows WHERE state='confirmed'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return int(n)


def started_batch(cmd: list[str], env: dict[str, str], journal: Path,
                  confirmed: int) -> subprocess.Popen[str]:
    """Start a batch command (pipes for stdout and stderr) and return it once its journal
    holds ``confirmed`` confirmed rows (or it ended, or a minute passed)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    give_up = time.monotonic() + 60
    while proc.poll() is None and confirmed_rows(journal) < confirmed \
            and time.monotonic() < give_up:
        time.sleep(0.01)
    return proc
