"""What the history as a transparency log costs as it grows (issue 45), beside
benchmarks/history_scale.py (which measures the batch path and the full listings).

    python benchmarks/transparency_scale.py                       # SQLite 10k and 1M
    python benchmarks/transparency_scale.py --size 10000 --size 100000 --backend postgresql

A history is grown through the store's own append interface (``begin_many`` /
``complete_many``, every event hashed into the chain and the Merkle tree, every trigger
run): the oldest order, ORDER-1, has ten entries, then one refund entry per order follows.
Figures, each a whole ``walletctl`` process unless said (median of 3, after a warm-up):

* ``history`` (the table: its 50 rows), ``--last 50 -o json``, ``-o csv`` (the time to its
  first data row, not its header), ``--ref ORDER-1``;
* ``order --evidence`` of ORDER-1: the bundle written in this process (no gateway: the
  view is the history's entries), and its size;
* ``check-evidence`` of that bundle: time and peak RSS (benchmarks/peak_rss.py);
* ``anchor``; ``verify --since-anchor`` over a file of two checkpoints (the walk since the
  newer one, the consistency proofs of both);
* ``appends/s``: 2,000 more entries (begin and completion), 100 per transaction, in this
  process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "src"))
sys.path.insert(0, str(BENCH))

from walletctl.history.store import Completion, Filters, HistoryStore, Intent  # noqa: E402

PY = sys.executable
GROW = 10_000  # entries per transaction while growing


def intent(ref: str, n: int, op: str = "refund") -> Intent:
    return Intent(time=f"2026-01-01T00:00:{n % 60:02d}.000Z", os_user="ana", host="desk-1",
                  profile="bench", base_url="http://127.0.0.1", operation=op,
                  original_ref=ref, new_ref=f"{ref}-R{n}", amount="7.50", currency="EUR",
                  merchant_id="M-1", store_id="S-1", reason="scale benchmark")


def grow(store: HistoryStore, have: int, size: int) -> None:
    if have == 0:
        ids = store.begin_many([intent("ORDER-1", n, "checkout" if n == 0 else "refund")
                                for n in range(10)])
        store.complete_many([(i, Completion(time="2026-01-01T00:01:00.000Z",
                                            outcome="approved")) for i in ids])
        have = 10
    while have < size:
        take = min(GROW, size - have)
        store.begin_many([intent(f"S{have + n:08d}", have + n) for n in range(take)])
        have += take


def appends_per_s(store: HistoryStore, start: int) -> float:
    began = time.perf_counter()
    for k in range(20):
        ids = store.begin_many([intent(f"A{start + k * 100 + n:08d}", n) for n in range(100)])
        store.complete_many([(i, Completion(time="2026-01-01T00:02:00.000Z",
                                            outcome="approved")) for i in ids])
    return 2000 / (time.perf_counter() - began)


def first_row(env: dict[str, str], *args: str, skip: int = 0) -> float:
    """Seconds until the process prints its first data line (after ``skip`` lines)."""
    began = time.perf_counter()
    proc = subprocess.Popen([PY, "-m", "walletctl", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for _ in range(skip + 1):
        proc.stdout.readline()
    took = time.perf_counter() - began
    proc.kill()
    proc.wait()
    return took


def whole(env: dict[str, str], *args: str) -> float:
    began = time.perf_counter()
    subprocess.run([PY, "-m", "walletctl", *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - began


def median(measure: Callable[[], float], runs: int = 3) -> float:
    measure()  # warm-up
    return statistics.median(measure() for _ in range(runs))


def figures(store_env: dict[str, str], open_store: Callable[[], HistoryStore],
            work: Path) -> dict[str, Any]:
    from walletctl.ops.evidence import write_bundle
    from walletctl.ops.order import OrderView

    env = {**store_env, "COLUMNS": "120", "NO_COLOR": "1",
           "PYTHONPYCACHEPREFIX": str(work / "pyc")}
    found: dict[str, Any] = {}
    found["history s"] = median(lambda: whole(env, "-o", "table", "history"))
    found["--last 50 s"] = median(lambda: whole(env, "-o", "json", "history", "--last", "50"))
    found["-o csv first row s"] = median(lambda: first_row(env, "-o", "csv", "history",
                                                           skip=1))
    found["--ref s"] = median(lambda: whole(env, "-o", "json", "history", "--ref", "ORDER-1"))
    bundle = work / "order-1.ndjson"
    with open_store() as store:
        view = OrderView(reference="ORDER-1", profile="bench", history=store.where,
                         backend="bench", now="2026-01-02T00:00:00.000Z", merchant_id="M-1",
                         store_id="S-1")

        def write() -> float:
            began = time.perf_counter()
            view.entries = list(store.entries(Filters(original_ref="ORDER-1")))
            write_bundle(bundle, store, view, "bench", None)
            return time.perf_counter() - began

        found["order --evidence s (in-process)"] = median(write)
    found["bundle KiB"] = round(bundle.stat().st_size / 1024, 1)
    found["check-evidence s"] = median(lambda: whole(env, "history", "check-evidence",
                                                     str(bundle)))
    rss = work / "rss.json"
    subprocess.run([PY, str(BENCH / "peak_rss.py"), str(rss), PY, "-m", "walletctl",
                    "history", "check-evidence", str(bundle)], env=env, capture_output=True,
                   check=True)
    found["check-evidence peak RSS MiB"] = round(
        json.loads(rss.read_text())["maxrss_kib"] / 1024, 1)
    found["anchor s"] = median(lambda: whole(env, "history", "anchor"))
    anchors = work / "anchors.jsonl"
    anchors.write_text(subprocess.run([PY, "-m", "walletctl", "history", "anchor"], env=env,
                                      capture_output=True, text=True, check=True).stdout)
    with open_store() as store:
        head = store.head()
        assert head is not None
        found["appends/s"] = round(appends_per_s(store, head.entry))
    with anchors.open("a") as out:
        out.write(subprocess.run([PY, "-m", "walletctl", "history", "anchor"], env=env,
                                 capture_output=True, text=True, check=True).stdout)
    found["verify --since-anchor (2 checkpoints) s"] = median(
        lambda: whole(env, "history", "verify", "--since-anchor", str(anchors)))
    return found


def run_sqlite(sizes: list[int], work: Path) -> dict[int, dict[str, Any]]:
    from walletctl.history import open_history

    path = work / "h.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(WALLETCTL_AUDIT_LOG=str(path), PYTHONPATH=str(BENCH.parent / "src"))
    results: dict[int, dict[str, Any]] = {}
    have = 0
    for size in sorted(sizes):
        began = time.perf_counter()
        with open_history(path) as store:
            grow(store, have, size)
            head = store.head()
            assert head is not None
            have = head.entry
        print(f"sqlite: grown to {have} entries in {time.perf_counter() - began:.0f} s",
              file=sys.stderr)
        results[size] = figures(env, lambda: open_history(path), work)
        print(json.dumps({size: results[size]}), file=sys.stderr)
    return results


def run_postgresql(sizes: list[int], work: Path) -> dict[int, dict[str, Any]]:
    from pg_server import shared_history

    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    results: dict[int, dict[str, Any]] = {}
    with shared_history(work) as (url, secret):
        os.environ.update(secret)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        env.update(WALLETCTL_HISTORY_URL=url, PYTHONPATH=str(BENCH.parent / "src"))
        have = 0
        for size in sorted(sizes):
            with PostgresHistory(parse_db_url(url)) as store:
                grow(store, have, size)
                head = store.head()
                assert head is not None
                have = head.entry
            results[size] = figures(env, lambda: PostgresHistory(parse_db_url(url)), work)
            print(json.dumps({size: results[size]}), file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, action="append")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), action="append")
    args = parser.parse_args()
    sizes = args.size or [10_000, 1_000_000]
    for backend in args.backend or ["sqlite"]:
        with tempfile.TemporaryDirectory(prefix="walletctl-tlog-") as tmp:
            run = run_sqlite if backend == "sqlite" else run_postgresql
            results = run(sizes, Path(tmp))
        names = list(next(iter(results.values())))
        first = min(results)
        print(f"\n{backend}: " + " | ".join(f"{s:,} entries" for s in sorted(results))
              + f" | ratio to {first:,}")
        for name in names:
            row = [results[s][name] for s in sorted(results)]
            base = results[first][name]
            last = results[max(results)][name]
            ratio = f"{last / base:.2f}" if isinstance(base, (int, float)) and base else "-"
            print(f"  {name:42} " + " | ".join(str(round(v, 3) if isinstance(v, float)
                                                    else v) for v in row) + f" | {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
