"""What a command costs as the history grows: 10k, 100k, 1M entries, on both backends.

    python benchmarks/history_scale.py                          # 10k and 100k, both backends
    python benchmarks/history_scale.py --size 10000 --size 1000000 --backend sqlite

One history per backend is grown through the store's own append interface
(``begin_many``/``complete_many`` in transactions of 1,000 entries, every event hashed into
the chain, every trigger run) to each size in turn: entries of one merchant, three years of
them, each refunded on its own order; ten are left with an unknown outcome (in the first
10k, so that ``--unknown`` lists the same ten at every size). The PostgreSQL history is on
the tests' throwaway cluster (benchmarks/pg_server.py: loopback, operator ``alice``). At each
size it prints, with the ratio to the 10k figure (10k is always measured first):

* ``batch rows/s``: ``walletctl capture --batch`` of 2,000 rows (c=16) against the embedded
  sandbox, recording into that history (each group of rows: the duplicate check, the begins,
  the completions);
* ``dup check ms``: the duplicate check of one group of 500 new references (``_begun``);
* ``--ref``, ``--unknown``: the query time of the listing and its count in this process
  (median of 15), and a whole ``walletctl history ... -o json`` process (median of 5);
* ``verify --since-anchor``: the walk in this process, and a whole ``walletctl history verify
  --since-anchor FILE`` process, whose anchor is the event before the last 10k entries (20k
  events walked), median of 3.

The goals (issue 37): batch rows/s at 1M >= 0.9 x at 10k; ``--ref`` and ``--unknown`` <= 50 ms
of query and <= 0.5 s of process at 1M; ``verify --since-anchor`` over the last 10k <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "src"))
sys.path.insert(0, str(BENCH))

from batch import MERCHANT, PY, STORE, batch_run, env, profile  # noqa: E402
from walletctl.history.store import Completion, Filters, HistoryStore, Intent  # noqa: E402

START = datetime(2023, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=90)  # 1M entries: about three years
UNKNOWN = frozenset(range(500, 10_000, 950))  # ten entries never completed
BATCH_ROWS = 2000


def when(i: int) -> str:
    return (START + i * STEP).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def ref(i: int) -> str:
    return f"S{i:07d}"


def intent(i: int) -> Intent:
    return Intent(time=when(i), os_user="ana", host="desk-1", profile="bench",
                  base_url="http://127.0.0.1", operation="refund", original_ref=ref(i),
                  new_ref=f"{ref(i)}-R1", amount="7.50", currency="EUR",
                  merchant_id=MERCHANT, store_id=STORE, reason="scale benchmark")


def grow(store: HistoryStore, have: int, size: int) -> int:
    """Append entries ``have``..``size``-1 (1,000 per transaction); returns ``size``."""
    for at in range(have, size, 1000):
        numbers = range(at, min(at + 1000, size))
        ids = store.begin_many(intent(i) for i in numbers)
        store.complete_many([(e, Completion(time=when(i), outcome="approved", http_status=200))
                             for i, e in zip(numbers, ids, strict=True) if i not in UNKNOWN])
    return size


def median_ms(reps: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        work()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def process_s(reps: int, argv: list[str], child_env: dict[str, str]) -> float:
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        proc = subprocess.run([PY, "-m", "walletctl", *argv], env=child_env,
                              capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - began)
        if proc.returncode != 0:
            raise SystemExit(f"walletctl {' '.join(argv)}: exit {proc.returncode}: "
                             f"{proc.stderr[-800:]}")
    return statistics.median(times)


def listing(store: HistoryStore, filters: Filters) -> int:
    found = sum(1 for _ in store.entries(filters))
    assert store.count(filters) == found
    return found


def measure(store: HistoryStore, size: int, work: Path, history_env: dict[str, str],
            sandbox: Any) -> dict[str, float]:
    """Every figure at this size (the history holds ``size`` entries and earlier batches)."""
    child = env(work, history_env)
    figures: dict[str, float] = {}
    refs = [f"B{size}-{i:05d}" for i in range(BATCH_ROWS)]
    cfg = profile(work / "profile", sandbox.url)
    summary = batch_run(work, cfg, refs, 16, reset=(sandbox, refs),
                        extra_env=history_env)
    figures["batch rows/s"] = summary["rows"] / summary["elapsed_s"]
    fresh = [Intent(**{**vars(intent(10_000_000 + i)), "original_ref": f"N{size}-{i}",
                       "new_ref": f"N{size}-{i}-R1"}) for i in range(500)]
    figures["dup check ms"] = median_ms(15, lambda: store._begun(fresh))
    probe = ref(size // 2)
    assert listing(store, Filters(ref=probe)) == 1
    assert listing(store, Filters(outcome="unknown")) == len(UNKNOWN)
    figures["--ref query ms"] = median_ms(15, lambda: listing(store, Filters(ref=probe)))
    figures["--unknown query ms"] = median_ms(
        15, lambda: listing(store, Filters(outcome="unknown")))
    figures["--ref process s"] = process_s(5, ["history", "--ref", probe, "-o", "json"], child)
    figures["--unknown process s"] = process_s(5, ["history", "--unknown", "-o", "json"],
                                               child)
    head = store.head()
    assert head is not None
    event = head.event - 20_000
    anchors = work / "anchors.jsonl"
    anchors.write_text(json.dumps({"event": event, "entry": 1, "hash": store.hashes(
        [event])[event], "time": when(0), "history": store.where}) + "\n")
    after = (event, store.hashes([event])[event])
    figures["verify --since-anchor walk ms"] = median_ms(3, lambda: store.verify(after))
    figures["verify --since-anchor s"] = process_s(
        3, ["history", "verify", "--since-anchor", str(anchors), "-o", "json"], child)
    return figures


@contextmanager
def backend(name: str, work: Path) -> Iterator[tuple[HistoryStore, dict[str, str]]]:
    """An empty history of this backend, and the environment that points walletctl at it."""
    if name == "sqlite":
        from walletctl.history.sqlite import SqliteHistory

        path = work / "history.sqlite3"
        with SqliteHistory(path) as store:
            yield store, {"WALLETCTL_AUDIT_LOG": str(path)}
        return
    from pg_server import shared_history

    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    with shared_history(work) as (url, pg_env):
        os.environ.update(pg_env)
        with PostgresHistory(parse_db_url(url), purpose="history_scale") as store:
            yield store, {**pg_env, "WALLETCTL_HISTORY_URL": url}


def run(name: str, sizes: list[int], work: Path, sandbox: Any) -> list[str]:
    rows: list[tuple[int, float, dict[str, float]]] = []
    with backend(name, work) as (store, history_env):
        have = 0
        for size in sizes:
            began = time.perf_counter()
            have = grow(store, have, size)
            built = time.perf_counter() - began
            print(f"[{name}] {size:,} entries built in {built:.0f} s", file=sys.stderr)
            rows.append((size, built, measure(store, size, work, history_env, sandbox)))
            print(f"[{name}] {size:,}: {rows[-1][2]}", file=sys.stderr)
    base = rows[0][2]
    lines = [f"{name}: figure at each size (ratio to the 10k figure)"]
    for figure in base:
        cells = []
        for size, _built, got in rows:
            ratio = got[figure] / base[figure] if base[figure] else float("nan")
            value = got[figure]
            shown = f"{value:.0f}" if value >= 100 else f"{value:.2f}" if value >= 1 \
                else f"{value:.3f}"
            cells.append(f"{size // 1000:>5}k {shown:>7} ({ratio:4.2f})")
        lines.append(f"  {figure:<24}" + "  ".join(cells))
    lines.append("  build (s, cumulative)  " + "  ".join(
        f"{size // 1000:>5}k {built:>7.0f}       " for size, built, _ in rows))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append",
                        help="history sizes in entries (repeat; 10000 is always first)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    sizes = sorted({10_000, *(args.size or [100_000])})
    if sizes[0] < 10_000 or any(s % 1000 for s in sizes):
        parser.error("--size: whole thousands, 10000 or more")
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    names = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    work = Path(tempfile.mkdtemp(prefix="walletctl-history-scale-"))
    report: list[str] = []
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
            for name in names:
                (work / name).mkdir()
                report += run(name, sizes, work / name, sandbox)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(report))


if __name__ == "__main__":
    main()
