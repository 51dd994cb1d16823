"""``walletctl order REF`` on a history of 100,000 entries, against the embedded sandbox.

    python benchmarks/order.py                  # 100,000 entries, best of 10
    python benchmarks/order.py --entries 1000000 --reps 3

Seeds a local history file with N entries on N/4 other orders (a checkout, two captures and
a refund each, through the store's API: ``begin_many`` / ``complete_many``) and the order
looked at (a sale, three refunds at the gateway, two of them in the history: one
disagreement), then prints:
 1. the query plans of what the view asks the history (EXPLAIN QUERY PLAN): the events are
    read through their indexes, never scanned;
 2. ``walletctl -o json order REF`` as a child process: wall time, best of N, and the same
    for ``walletctl -o json lookup REF`` (the process and the one lookup alone); the
    difference is the command's own time beyond one lookup;
 3. the view's own parts in this process (history read, lookup, comparison and JSON).
The goal (issue 36): under 300 ms of the command's own time plus one lookup.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import httpx

from batch import MERCHANT, PY, STORE, env, profile, run_child
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, Intent
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

TARGET = "ORDER-TARGET"


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def seed(sb: EmbeddedSandbox, history: Path, entries: int, base_url: str) -> None:
    httpx.post(sb.url + "/_sandbox/reset").raise_for_status()
    now = datetime.now(UTC)
    with sb.store.atomic():
        for reference, kind, type_str, amount, invoice in (
                (TARGET, "sale", "ecom.sale", "100.00", None),
                (f"{TARGET}-REF1", "refund", "ecom.refund", "10.00", TARGET),
                (f"{TARGET}-REF2", "refund", "ecom.refund", "5.00", TARGET),
                (f"{TARGET}-DASH1", "refund", "ecom.refund", "2.50", TARGET)):
            sb.store.create_transaction(
                merchant_id=MERCHANT, store_id=STORE, reference=reference, kind=kind,
                type_str=type_str, amount=Decimal(amount), currency="EUR", state="Approved",
                method="WalletV2", now=now, invoice_reference=invoice)
    history.unlink(missing_ok=True)
    stamp = _stamp()

    def intent(op: str, original: str, new: str | None, amount: str) -> Intent:
        return Intent(time=stamp, os_user="bench", host="bench", profile="bench",
                      base_url=base_url, operation=op, original_ref=original, new_ref=new,
                      amount=amount, currency="EUR", merchant_id=MERCHANT, store_id=STORE)

    steps = (("checkout", None, "40.00"), ("capture", "CAP1", "10.00"),
             ("capture", "CAP2", "20.00"), ("refund", "REF1", "5.00"))
    with SqliteHistory(history) as store:
        for start in range(0, entries // 4, 5_000):
            batch = [intent(op, f"O-{n:07d}", f"O-{n:07d}-{tail}" if tail else None, amount)
                     for n in range(start, min(start + 5_000, entries // 4))
                     for op, tail, amount in steps]
            ids = store.begin_many(batch)
            store.complete_many((i, Completion(time=stamp, outcome="approved")) for i in ids)
        ids = store.begin_many([intent("refund", TARGET, f"{TARGET}-REF1", "10.00"),
                                intent("refund", TARGET, f"{TARGET}-REF2", "5.00")])
        store.complete_many((i, Completion(time=stamp, outcome="approved")) for i in ids)


def plans(history: Path) -> list[str]:
    """EXPLAIN QUERY PLAN of the view's queries; SystemExit when events are scanned."""
    from walletctl.history.desk_tables import APPROVAL_COLUMNS
    from walletctl.history.store import Filters, HistoryStore

    found: list[str] = []
    approvals = f"SELECT {', '.join(APPROVAL_COLUMNS)} FROM approvals"  # noqa: S608 - names
    with SqliteHistory(history) as store:
        sql, args = HistoryStore._where(store, Filters(original_ref=TARGET))
        queries = [("history entries", sql + " ORDER BY b.entry", args),
                   ("approval requests", approvals + " WHERE 1 = 1 AND original_ref = ? "
                    "AND merchant_id = ? AND store_id = ? ORDER BY id",
                    [TARGET, MERCHANT, STORE])]
    db = sqlite3.connect(history)
    try:
        for name, query, qargs in queries:
            rows = db.execute("EXPLAIN QUERY PLAN " + query, qargs).fetchall()
            for row in rows:
                line = f"{name}: {row[-1]}"
                found.append(line)
                if row[-1].startswith("SCAN") and "events" in row[-1]:
                    raise SystemExit(f"the history's events are scanned: {line}")
    finally:
        db.close()
    return found


def children(work: Path, cfg: Path, history: Path, reps: int) -> tuple[float, float]:
    """Best wall times of ``order REF`` (exit 13) and ``lookup REF`` (exit 0), run in turns
    so that a busy machine slows both alike."""
    best = {"order": float("inf"), "lookup": float("inf")}
    for _ in range(reps):
        for name, expect in (("order", 13), ("lookup", 0)):
            cmd = [PY, "-m", "walletctl", "--config", str(cfg), "-o", "json", name, TARGET]
            began = time.perf_counter()
            code, out, err, _rss, _cpu = run_child(
                cmd, env(work, {"WALLETCTL_AUDIT_LOG": str(history)}))
            took = time.perf_counter() - began
            if code != expect:
                raise SystemExit(f"{name} exited {code}, not {expect}: {err[-2000:]}")
            json.loads(out)
            best[name] = min(best[name], took)
    return best["order"], best["lookup"]


def in_process(cfg: Path, history: Path, reps: int) -> dict[str, float]:
    """The view's parts, timed in this process (best of ``reps``), milliseconds."""
    import os

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profiles_file import load_profile
    from walletctl.history.approvals import listing
    from walletctl.history.store import Filters
    from walletctl.ops.order import findings_on, order_view
    from walletctl.render.order import render_order

    os.environ["WALLETCTL_AUDIT_LOG"] = str(history)
    prof = load_profile("bench", cfg)
    best: dict[str, float] = {}

    def keep(name: str, began: float) -> None:
        best[name] = min(best.get(name, float("inf")), (time.perf_counter() - began) * 1000)

    for _ in range(reps):
        with GatewayClient(prof) as client:
            began = time.perf_counter()
            with SqliteHistory(history) as store:
                entries = list(store.entries(Filters(original_ref=TARGET)))
                list(listing(store, now=_stamp(), original_ref=TARGET))
            keep("history read (entries + approvals)", began)
            began = time.perf_counter()
            records = client.lookup(TARGET)
            keep("one lookup", began)
            began = time.perf_counter()
            findings_on(TARGET, entries, records)
            keep("comparison", began)
            began = time.perf_counter()
            view = order_view(prof, client, TARGET)
            keep("order_view (all of it, lookup included)", began)
            began = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                render_order(view, "json")
            keep("render -o json", began)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="walletctl-order-bench-"))
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
            cfg = profile(work, sb.url)
            history = work / "history.sqlite3"
            began = time.perf_counter()
            seed(sb, history, args.entries, sb.url)
            with SqliteHistory(history) as store:
                total = store.count()
            print(f"seeded {total} entries in {time.perf_counter() - began:.1f} s "
                  f"({history.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)
            print("1. query plans (EXPLAIN QUERY PLAN):")
            for line in plans(history):
                print(f"   {line}")
            order, lookup = children(work, cfg, history, args.reps)
            print(f"2. walletctl order {TARGET} on {total} entries (best of {args.reps}):")
            print(f"   order  {order * 1000:7.0f} ms wall (exit 13: one disagreement named)")
            print(f"   lookup {lookup * 1000:7.0f} ms wall (the process and one lookup)")
            print(f"   order's own time beyond one lookup: {(order - lookup) * 1000:.0f} ms "
                  f"(goal: under 300 ms)")
            print("3. in this process (best of N), ms:")
            for name, ms in in_process(cfg, history, args.reps).items():
                print(f"   {name:45} {ms:8.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
