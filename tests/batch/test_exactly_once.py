"""Exactly-once, proven from the sandbox's own ledger.

* 1,000 captures through ``python -m walletctl capture --batch`` against a real-port sandbox
  with 5xx before and after commit, commit-then-drop, latency and a 429 burst.
* The same process killed with SIGKILL at a random point (several seeds), then resumed.
* Ctrl-C (SIGINT): exits 130 leaving no row in flight, then resumes.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
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

from journal_probe import confirmed_rows, started_batch
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

BASE_FAULTS = {"latency": 2, "jitter": 2, "error-rate": 0.1, "status": 503,
               "error-after-rate": 0.03, "drop-rate": 0.03}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb


@pytest.fixture
def fresh(sandbox: EmbeddedSandbox) -> EmbeddedSandbox:
    set_faults(sandbox.url, {})
    assert httpx.post(sandbox.url + "/_sandbox/reset").status_code == 200
    return sandbox


def batch_cmd(cfg: Path, src: Path, *extra: str) -> list[str]:
    return [PYTHON, "-m", "walletctl", "--config", str(cfg), "-o", "json", "capture",
            "--batch", str(src), "--concurrency", "16", *extra]


def make_batch(
    tmp_path: Path, sb: EmbeddedSandbox, n: int, prefix: str
) -> tuple[list[str], Path, Path]:
    refs = [f"{prefix}-{i:05d}" for i in range(n)]
    seed_preauths_fast(sb.store, refs, "10.00")
    src = tmp_path / "captures.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"{r},7.50,EUR\n" for r in refs))
    return refs, src, write_profile(tmp_path, sb.url)


PATHS = {"direct": (), "full-preflight": ("--full-preflight",)}


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PATHS))
def test_1000_captures_under_faults_are_applied_exactly_once(
    tmp_path: Path, fresh: EmbeddedSandbox, path: str
) -> None:
    refs, src, cfg = make_batch(tmp_path, fresh, 1000, "F")
    set_faults(fresh.url, {**BASE_FAULTS, "seed": 5})

    journal = tmp_path / "captures.csv.capture.journal"

    def burst() -> None:  # a burst of 429s (Retry-After: 1) in the middle of the run
        deadline = time.monotonic() + 120  # mid-run: once rows are being confirmed
        while confirmed_rows(journal) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        set_faults(fresh.url, {**BASE_FAULTS, "throttle-rate": 0.6, "retry-after": 1, "seed": 6})
        time.sleep(0.8)
        set_faults(fresh.url, {**BASE_FAULTS, "seed": 7})

    thread = threading.Thread(target=burst)
    thread.start()
    proc = subprocess.run(batch_cmd(cfg, src, "--results", str(tmp_path / "r.ndjson"),
                                    *PATHS[path]),
                          env=cli_env(tmp_path), capture_output=True, text=True, timeout=240)
    thread.join()
    set_faults(fresh.url, {})
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["confirmed"] == 1000, summary
    events = summary["events"]
    assert events.get("direct", 0) == (1000 if path == "direct" else 0), events
    for kind in ("gateway_5xx", "no_answer", "found_on_lookup", "absent_on_lookup", "throttled"):
        assert events.get(kind, 0) > 0, f"fault {kind!r} never happened: {events}"
    assert_exactly_once(ledger(fresh.url), refs, Decimal("7.50"))
    results = [json.loads(x) for x in (tmp_path / "r.ndjson").read_text().splitlines()]
    assert len(results) == 1000
    assert {r["status"] for r in results} == {"confirmed"}
    assert any(r["attempts"] > 1 for r in results), "no row needed a second send"


def _run_until(cmd: list[str], env: dict[str, str], journal: Path, target: int,
               sig: int) -> tuple[int, str]:
    proc = started_batch(cmd, env, journal, target)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize(("seed", "path"),
                         [(1, "direct"), (2, "full-preflight"), (3, "direct")])
def test_sigkill_at_a_random_point_then_resume(
    tmp_path: Path, fresh: EmbeddedSandbox, seed: int, path: str
) -> None:
    n = 300
    refs, src, cfg = make_batch(tmp_path, fresh, n, f"K{seed}")
    set_faults(fresh.url, {"latency": 3, "jitter": 3, "error-rate": 0.05, "drop-rate": 0.02,
                       "seed": seed})
    target = random.Random(seed).randint(10, n - 40)
    journal = tmp_path / "captures.csv.capture.journal"
    code, err = _run_until(batch_cmd(cfg, src, *PATHS[path]), cli_env(tmp_path), journal,
                           target, signal.SIGKILL)
    assert code == -signal.SIGKILL, f"finished before the kill: {err[-2000:]}"
    done = confirmed_rows(journal)
    assert target <= done < n
    before = [r for r in ledger(fresh.url) if r["kind"] == "capture"]
    assert done <= len(before) < n

    proc = subprocess.run(batch_cmd(cfg, src, "--resume", *PATHS[path]), env=cli_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    set_faults(fresh.url, {})
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["confirmed"] == n
    assert summary["earlier_run"] >= done
    assert_exactly_once(ledger(fresh.url), refs, Decimal("7.50"))
    # The history holds one entry per row, none left unknown by the kill.
    listed = subprocess.run([PYTHON, "-m", "walletctl", "--config", str(cfg), "-o", "ndjson",
                             "history", "--op", "capture"], env=cli_env(tmp_path),
                            capture_output=True, text=True, timeout=120, check=False)
    assert listed.returncode == 0, listed.stderr
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    per_row = Counter(e["batch_row"] for e in entries)
    assert len(per_row) == n, f"{n - len(per_row)} rows missing from the history"
    assert max(per_row.values()) == 1, per_row.most_common(3)
    assert Counter(e["outcome"] for e in entries) == {"approved": n}


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path: Path, fresh: EmbeddedSandbox) -> None:
    n = 300
    refs, src, cfg = make_batch(tmp_path, fresh, n, "C")
    set_faults(fresh.url, {"latency": 5, "seed": 9})
    journal = tmp_path / "captures.csv.capture.journal"
    code, err = _run_until(batch_cmd(cfg, src), cli_env(tmp_path), journal, 50, signal.SIGINT)
    assert code == 130, err[-2000:]
    assert "stopping" in err
    assert "Traceback" not in err
    db = sqlite3.connect(str(journal))
    states = dict(db.execute("SELECT state, count(*) FROM rows GROUP BY state").fetchall())
    db.close()
    assert states.get("sent", 0) == 0, f"rows left in flight after a clean stop: {states}"
    assert 50 <= states.get("confirmed", 0) < n

    proc = subprocess.run(batch_cmd(cfg, src), env=cli_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    set_faults(fresh.url, {})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_exactly_once(ledger(fresh.url), refs, Decimal("7.50"))


def test_ctrl_c_twice_aborts_and_the_summary_still_accounts_for_every_row(
    tmp_path: Path, fresh: EmbeddedSandbox
) -> None:
    n = 300
    refs, src, cfg = make_batch(tmp_path, fresh, n, "CC")
    set_faults(fresh.url, {"latency": 400, "seed": 4})  # the second Ctrl-C finds rows in flight
    journal = tmp_path / "captures.csv.capture.journal"
    proc = started_batch(batch_cmd(cfg, src), cli_env(tmp_path), journal, 8)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # the second: abort now, requests in flight and all
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    summary = json.loads(out)
    counted = sum(summary[k] for k in ("confirmed", "refused", "unknown", "pending"))
    assert counted == n, summary  # every row is somewhere, none silently dropped
    assert summary["pending"] + summary["unknown"] > 0, summary
    assert f"{summary['pending'] + summary['unknown']} row(s) left" in err, err[-2000:]

    set_faults(fresh.url, {})
    again = subprocess.run(batch_cmd(cfg, src), env=cli_env(tmp_path), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert_exactly_once(ledger(fresh.url), refs, Decimal("7.50"))


def test_ctrl_c_pressed_again_and_again_still_exits_130(
    tmp_path: Path, fresh: EmbeddedSandbox
) -> None:
    """After the first Ctrl-C, more keep coming (a user hammering the key) until the process
    is gone: whichever phase each lands in (the stop, the abort, the summary, the exit), the
    process ends with its documented 130, never killed by SIGINT, never a traceback."""
    n = 200
    _refs, src, cfg = make_batch(tmp_path, fresh, n, "CS")
    set_faults(fresh.url, {"latency": 10, "seed": 5})
    journal = tmp_path / "captures.csv.capture.journal"
    proc = started_batch(batch_cmd(cfg, src), cli_env(tmp_path), journal, 10)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.02)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.005)
    _out, err = proc.communicate(timeout=60)
    set_faults(fresh.url, {})
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err


def test_direct_row_refused_by_the_gateway_is_final_and_never_resent(
    tmp_path: Path, fresh: EmbeddedSandbox
) -> None:
    seed_preauths_fast(fresh.store, ["DX-1", "DX-2"], "10.00")
    src = tmp_path / "captures.csv"
    src.write_text("ref,amount,currency\nDX-1,10.01,EUR\nDX-2,10.00,EUR\n")
    cfg = write_profile(tmp_path, fresh.url)
    proc = subprocess.run(batch_cmd(cfg, src, "--results", str(tmp_path / "r.ndjson")),
                          env=cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 5, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["requests"] == 2, summary
    assert summary["events"]["direct"] == 2, summary
    assert "line 2: DX-1: refused: gateway: gateway answered HTTP 422" in proc.stderr
    # results come in the order rows finish (DX-2 may finish first)
    results = [json.loads(line) for line in (tmp_path / "r.ndjson").read_text().splitlines()]
    first, = [r for r in results if r["ref"] == "DX-1"]
    assert first["status"] == "refused"
    assert "exceeds the remaining authorised amount" in first["detail"]
    db = sqlite3.connect(str(tmp_path / "captures.csv.capture.journal"))
    (state, detail, attempts), = db.execute(
        "SELECT state, detail, attempts FROM rows WHERE ref='DX-1'").fetchall()
    db.close()
    assert (state, attempts) == ("refused", 1)
    assert detail == first["detail"]
    again = subprocess.run(batch_cmd(cfg, src), env=cli_env(tmp_path), capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 5, again.stderr
    assert json.loads(again.stdout)["requests"] == 0, "a refused row was sent again"
    assert [r["invoiceReference"] for r in ledger(fresh.url) if r["kind"] == "capture"] \
        == ["DX-2"]
