"""``walletctl recon`` over 1,000 references against the embedded sandbox, measured in one run.

    python benchmarks/recon.py                  # 1,000 orders, best of 3
    python benchmarks/recon.py --orders 10000 --reps 1

Seeds the sandbox's store with N approved sales and one approved refund each, and a local
history file with the N matching refund entries (through the store's API, ``begin_many`` /
``complete_many``), then runs ``walletctl -o json recon`` as a child process (the sandbox
runs in this process: client and server do not share a GIL) and prints:
 1. the clean run: every entry confirmed (exit 0): wall time of the whole command, the
    engine's lookups/s, peak memory and CPU of the child;
 2. the same after 1% more refunds posted straight into the sandbox (no history entry):
    exit 13, each of them named;
 3. the clean run at c=8 (what the concurrency buys).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from batch import KEY, MERCHANT, PY, STORE, env, profile, run_child
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, Intent
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

assert KEY  # the profile's key (benchmarks/batch.py writes it)


def seed(sb: EmbeddedSandbox, history: Path, orders: list[str], base_url: str) -> None:
    """N approved sales of 10.00 EUR, each refunded 2.50 at the gateway and in the history."""
    httpx.post(sb.url + "/_sandbox/reset").raise_for_status()
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    with sb.store.atomic():
        for ref in orders:
            for reference, kind, type_str, amount, invoice in (
                    (ref, "sale", "ecom.sale", "10.00", None),
                    (f"{ref}-REF1", "refund", "ecom.refund", "2.50", ref)):
                sb.store.create_transaction(
                    merchant_id=MERCHANT, store_id=STORE, reference=reference, kind=kind,
                    type_str=type_str, amount=Decimal(amount), currency="EUR",
                    state="Approved", method="WalletV2", now=now, invoice_reference=invoice)
    history.unlink(missing_ok=True)
    with SqliteHistory(history) as store:
        ids = store.begin_many(Intent(
            time=stamp, os_user="bench", host="bench", profile="bench", base_url=base_url,
            operation="refund", original_ref=ref, new_ref=f"{ref}-REF1", amount="2.50",
            currency="EUR", merchant_id=MERCHANT, store_id=STORE) for ref in orders)
        store.complete_many((i, Completion(time=stamp, outcome="approved")) for i in ids)


def unrecorded(sb: EmbeddedSandbox, orders: list[str]) -> None:
    now = datetime.now(UTC)
    with sb.store.atomic():
        for ref in orders:
            sb.store.create_transaction(
                merchant_id=MERCHANT, store_id=STORE, reference=f"{ref}-DASH1", kind="refund",
                type_str="ecom.refund", amount=Decimal("1.00"), currency="EUR",
                state="Approved", method="WalletV2", now=now, invoice_reference=ref)


def recon_run(work: Path, cfg: Path, history: Path, c: int, expect: int) -> dict[str, Any]:
    cmd = [PY, "-m", "walletctl", "--config", str(cfg), "-o", "json", "recon",
           "--concurrency", str(c), "--max-failures", "1000"]
    began = time.perf_counter()
    code, out, err, rss, cpu = run_child(cmd, env(work, {"WALLETCTL_AUDIT_LOG": str(history)}))
    wall = time.perf_counter() - began
    if code != expect:
        raise SystemExit(f"recon exited {code}, not {expect}: {err[-2000:]}")
    doc = json.loads(out)
    summary: dict[str, Any] = doc["summary"]
    summary.update(wall_s=wall, maxrss_kib=rss, cpu_s=cpu, counts=doc["counts"],
                   unrecorded=len(doc["unrecorded"]))
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orders", type=int, default=1_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    n = args.orders
    rows: list[tuple[str, str, str, str]] = []
    work = Path(tempfile.mkdtemp(prefix="walletctl-recon-bench-"))
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
            cfg = profile(work, sb.url)
            history = work / "history.sqlite3"
            orders = [f"R-{i:07d}" for i in range(n)]
            seed(sb, history, orders, sb.url)

            def best(c: int, expect: int) -> dict[str, Any]:
                runs = [recon_run(work, cfg, history, c, expect) for _ in range(args.reps)]
                return min(runs, key=lambda s: float(s["wall_s"]))

            for label, c, expect in (("1. clean", 32, 0), ("3. clean", 8, 0)):
                s = best(c, expect)
                assert s["counts"]["agreed"] == n, s
                rows.append((f"{label}, c={c}, {n} orders", f"{s['wall_s']:.2f} s wall",
                             f"{s['requests'] / s['elapsed_s']:.0f} lookups/s "
                             f"({s['requests']} requests in {s['elapsed_s']:.2f} s)",
                             f"{s['maxrss_kib'] / 1024:.0f} MiB, {s['cpu_s']:.2f} s CPU"))
                print(f"[{label} c={c}] {s}", file=sys.stderr)
            extra = orders[:: 100]
            unrecorded(sb, extra)
            s = best(32, 13)
            assert s["unrecorded"] == len(extra), s
            rows.insert(1, (f"2. {len(extra)} unrecorded, c=32, {n} orders",
                            f"{s['wall_s']:.2f} s wall",
                            f"{s['requests'] / s['elapsed_s']:.0f} lookups/s "
                            f"({s['requests']} requests in {s['elapsed_s']:.2f} s)",
                            f"exit 13, {s['unrecorded']} named"))
            print(f"[2] {s}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ("measure", "walletctl recon", "engine", "child")
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for r in [head, tuple("-" * w for w in width), *rows]:
        print("  ".join(v.ljust(w) for v, w in zip(r, width, strict=True)))


if __name__ == "__main__":
    main()
