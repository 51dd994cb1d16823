"""Issue 9 item 3: one run per journal. Two real processes on one journal: the second refuses
at once, naming the running one (pid, host, start time); nothing is sent twice."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from batch_helpers import (
    PYTHON,
    assert_exactly_once,
    cli_env,
    ledger,
    seed_preauths_fast,
    set_faults,
    write_profile,
)

from timescale import scaled
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb


def _setup(tmp_path: Path, sb: EmbeddedSandbox, prefix: str, n: int) -> tuple[list[str], list[str]]:
    set_faults(sb.url, {})
    assert httpx.post(sb.url + "/_sandbox/reset").status_code == 200
    refs = [f"{prefix}-{i:04d}" for i in range(n)]
    seed_preauths_fast(sb.store, refs, "10.00")
    src = tmp_path / "captures.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"{r},7.50,EUR\n" for r in refs))
    cfg = write_profile(tmp_path, sb.url)
    cmd = [PYTHON, "-m", "walletctl", "--config", str(cfg), "-o", "json", "capture",
           "--batch", str(src), "--concurrency", "4"]
    return refs, cmd


def test_a_second_run_on_a_busy_journal_refuses_at_once_naming_the_first(
    tmp_path: Path, sandbox: EmbeddedSandbox
) -> None:
    refs, cmd = _setup(tmp_path, sandbox, "L", 120)
    # a second per request keeps the first run busy (120 rows, 4 at a time) however long the
    # second process takes to start on a loaded machine; lifted once the second has answered
    set_faults(sandbox.url, {"latency": 1000})
    env = cli_env(tmp_path)
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    journal = tmp_path / "captures.csv.capture.journal"
    deadline = time.monotonic() + 30
    while not journal.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # well into sending
    started = time.monotonic()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - started
    assert first.poll() is None, "the first run ended before the second started"
    assert second.returncode == 2, second.stderr
    assert f"is in use by another run (pid {first.pid} on {socket.gethostname()}, started" \
        in second.stderr, second.stderr
    assert second.stdout == ""
    set_faults(sandbox.url, {})
    assert took < scaled(10)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["confirmed"] == 120
    assert_exactly_once(ledger(sandbox.url), refs, Decimal("7.50"))


def test_two_runs_started_together_one_runs_the_other_refuses(
    tmp_path: Path, sandbox: EmbeddedSandbox
) -> None:
    refs, cmd = _setup(tmp_path, sandbox, "T", 100)
    set_faults(sandbox.url, {"latency": 40})  # the run lasts ~1 s: both start inside it
    env = cli_env(tmp_path)
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    set_faults(sandbox.url, {})
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)]
    assert "is in use by another run" in loser[1]
    assert_exactly_once(ledger(sandbox.url), refs, Decimal("7.50"))
