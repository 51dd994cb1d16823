"""SIGTERM and SIGHUP stop a batch exactly like Ctrl-C (issue 9, item 2): exit 130, no row
left in flight, and the resumed run applies every row exactly once (sandbox ledger)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from journal_probe import started_batch

from .conftest import cli_env, write_profile

SANDBOX_KEY = "sandbox-api-key"


# SIGINT and SIGTERM: tests/batch; SIGHUP is the one issue 9 added to the batch's handlers
@pytest.mark.parametrize("sig", [signal.SIGHUP], ids=["SIGHUP"])
def test_batch_stops_cleanly_on_a_signal_and_resumes(
    live_sandbox: Any, tmp_path: Path, sig: int
) -> None:
    n = 150
    refs = [f"B{int(sig)}-{i:04d}" for i in range(n)]
    now = datetime.now(UTC)
    with live_sandbox.store.atomic():
        for ref in refs:
            live_sandbox.store.create_transaction(
                merchant_id="M-1001", store_id="S-01", reference=ref, kind="preauth",
                type_str="ecom.preauthorization", amount=Decimal("10.00"), currency="EUR",
                state="Approved", method="WalletV2", now=now)
    src = tmp_path / "rows.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"{r},7.50,EUR\n" for r in refs))
    config = write_profile(tmp_path, live_sandbox.url)
    env = cli_env(config, key=SANDBOX_KEY)
    assert httpx.post(f"{live_sandbox.url}/_sandbox/faults", json={"latency": 20}).is_success
    cmd = [sys.executable, "-m", "walletctl", "-o", "json", "capture", "--batch", str(src),
           "--concurrency", "4", "--yes"]
    journal = tmp_path / "rows.csv.capture.journal"

    proc = started_batch(cmd, env, journal, 20)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    db = sqlite3.connect(str(journal))
    states = dict(db.execute("SELECT state, count(*) FROM rows GROUP BY state").fetchall())
    db.close()
    assert states.get("sent", 0) == 0, f"rows left in flight after a clean stop: {states}"
    assert 20 <= states.get("confirmed", 0) < n, states

    assert httpx.post(f"{live_sandbox.url}/_sandbox/faults", json={}).is_success
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    captures = [t for t in httpx.get(f"{live_sandbox.url}/_sandbox/ledger").json()
                ["transactions"] if t["kind"] == "capture"]
    per_original = Counter(t["invoiceReference"] for t in captures)
    assert sorted(per_original) == sorted(refs), "a row missing or a stray capture"
    assert max(per_original.values()) == 1, per_original.most_common(3)
    assert len(captures) == n, f"{len(captures)} captures for {n} rows"
