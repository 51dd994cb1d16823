"""`walletctl history -o json` and `-o csv` over 60,000 entries, run as a process: the
listing is written as the store reads it, so the process's peak memory does not grow with
the history (it held every entry, about 700 MiB per 100,000, before: some 420 MiB here,
nearly three times the bound) and the first row is out long before the last is read. The
precise figures (100k, 1M) are benchmarks' work; the bounds here are generous."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent

ENTRIES = 60_000
PEAK_MIB = 150  # streamed: about 30 MiB whatever the size
FIRST_BYTE_S = 10.0  # streamed: well under a second on an idle machine

# Started from this small launcher, the child's peak RSS (ru_maxrss) is its own: a child
# forked straight from pytest would carry pytest's high-water mark over its exec.
LAUNCHER = ("import os, subprocess, sys\n"
            "child = subprocess.Popen(sys.argv[1:])\n"
            "_, status, usage = os.wait4(child.pid, 0)\n"
            "sys.stderr.write(f'peak-rss-kib {usage.ru_maxrss}\\n')\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60,000 entries through the store's own interface (begin_many, 20,000 a write)."""
    path = tmp_path_factory.mktemp("stream") / "history.sqlite3"
    with SqliteHistory(path) as store:
        for at in range(0, ENTRIES, 20_000):
            store.begin_many(Intent(
                time="2026-01-01T00:00:00.000Z", os_user="ops", host="desk", profile="shop",
                base_url="http://127.0.0.1:8765", operation="refund",
                original_ref=f"ORDER-{i}", new_ref=f"ORDER-{i}-R1", amount="1.00",
                currency="EUR", merchant_id="M-1001", store_id="S-01", outcome="refused",
                exit_code=4, reason="=a reason that looks like a formula")
                for i in range(at, at + 20_000))
    return path


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_long_listing_streams_in_flat_memory(history: Path, tmp_path: Path,
                                               fmt: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update({"WALLETCTL_CONFIG": str(tmp_path / "profiles.toml"),
                "WALLETCTL_AUDIT_LOG": str(history), "NO_COLOR": "1"})
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, sys.executable, "-m", "walletctl",
                             "history", "-o", fmt], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    first_byte = time.monotonic() - started
    second = proc.stdout.readline()
    lines, objects, last = 2, int(second == b"  {\n"), b""
    for line in proc.stdout:
        lines += 1
        objects += line == b"  {\n"
        last = line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    peak_mib = int(stderr.split("peak-rss-kib ")[1]) / 1024
    if fmt == "json":  # the document whole: an array, one object per entry
        assert first == b"[\n", first
        assert second == b"  {\n", second
        assert last == b"]\n", last
        assert objects == ENTRIES, objects
    else:  # a header, one line per entry, gateway text still neutralised
        assert first.startswith(b"id,time,"), first
        assert lines == ENTRIES + 1, lines
        assert b",'=a reason that looks like a formula," in last, last
    assert first_byte < FIRST_BYTE_S, first_byte
    assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib:.0f} MiB for {ENTRIES} entries"
