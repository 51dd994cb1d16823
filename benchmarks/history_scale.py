"""What a command costs as the history grows: 10k to 5M entries, on both backends.

    python benchmarks/history_scale.py                          # 10k and 100k, both backends
    python benchmarks/history_scale.py --size 100000 --size 1000000 --backend sqlite
    python benchmarks/history_scale.py --suite log --backend postgresql \
        --size 10000 --size 1000000 --size 5000000                # the transparency log

Two histories per backend are grown through the store's own append interface
(``begin_many``/``complete_many`` in transactions of 1,000 entries, every event hashed into
the chain, every trigger run): the *baseline*, of 10k entries, and the *grown* one, taken to
each size in turn. Entries of one merchant, three years of them, each refunded on its own
order; ten are left with an unknown outcome (in the first 10k, so that ``--unknown`` lists
the same ten at every size). Each figure is measured on the two histories in turn, round
after round, so that a busy machine slows both alike, and printed with its ratio to the
baseline's (1.00: the size costs nothing). On PostgreSQL each history has a throwaway
cluster of its own (benchmarks/pg_server.py: loopback, operator ``alice``). The figures:

* ``batch rows/s``: ``walletctl capture --batch`` of 1,000 rows (c=16) against the embedded
  sandbox, recording into that history (each group of rows: the duplicate check, the
  begins, the completions), best of 3;
* ``dup check ms``: the duplicate check of one group of 500 new references (``_begun``);
* ``--ref``, ``--unknown`` ``query ms``: the listing and its count in this process
  (median of 15); ``process s``: a whole ``walletctl history ... -o json`` (median of 5),
  and its CPU time (``process cpu s``: what a busy machine does not inflate);
* ``-o json`` / ``-o csv``: the whole history piped out by ``walletctl -o FMT history``: its
  first byte (s) and the process's peak RSS (MiB; benchmarks/peak_rss.py), once each;
* ``verify --anchor``: the walk in this process (``walk ms``), and a whole ``walletctl
  history verify --anchor FILE`` process (``s``, and ``cpu s``), whose anchor is the
  event before the last 10k entries (20k events walked), median of 3.

Processes run with their bytecode kept (in the scratch directory), as an installed walletctl
does, after one warm-up run of each.

The goals (issue 37): batch rows/s at 1M >= 0.9 x at 10k; ``--ref`` and ``--unknown`` <= 50 ms
of query and <= 0.5 s of process at 1M; ``-o json``/``-o csv`` at 1M with peak RSS <= 100 MB
and the first row out in < 1 s; ``verify --anchor`` over the last 10k <= 1 s.

``--suite log`` (issue 45, the history as a transparency log): a history per backend seeded
fast to each size by benchmarks/history_seed.py (the product's own rows and Merkle nodes,
in large transactions), then, each a whole ``walletctl`` process, median of 3 after a
warm-up: the time to the first row of ``history`` (the table), ``history --last 50 -o csv``,
``-o csv`` (its first data row, not the header), ``--ref ORDER-1 -o csv``, ``order
ORDER-1`` and ``order ORDER-1 --evidence FILE`` (the oldest order, against the embedded
sandbox); ``history check-evidence`` of that bundle (time, and peak RSS once);
``history anchor``; ``verify --anchor`` over a file of two checkpoints (consistency proofs,
and the walk of what was added after the newest); ``verify --anchor --full`` over it once (a
walk of the whole chain: O(n) by design); and ``appends/s``: 2,000
entries (begin and completion), 100 per transaction, through the store in this process.
Each size's figures are printed with the ratio to the smallest size's (goal: <= 1.2 for
every figure but the full walk), and the load average when each size was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
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
BATCH_ROWS = 1000


def when(i: int) -> str:
    return (START + i * STEP).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def ref(i: int) -> str:
    return f"S{i:07d}"


def intent(i: int) -> Intent:
    return Intent(time=when(i), os_user="ana", host="desk-1", profile="bench",
                  base_url="http://127.0.0.1", operation="refund", original_ref=ref(i),
                  new_ref=f"{ref(i)}-R1", amount="7.50", currency="EUR",
                  merchant_id=MERCHANT, store_id=STORE, reason="scale benchmark")


def timed(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def run_s(argv: list[str], child_env: dict[str, str]) -> tuple[float, float]:
    """A whole ``walletctl`` process: (wall seconds, CPU seconds: user + system)."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen([PY, "-m", "walletctl", *argv], env=child_env,
                                 stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        if status != 0:
            err.seek(0)
            raise SystemExit(f"walletctl {' '.join(argv)}: exit status {status}: "
                             f"{err.read()[-800:].decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def listing(store: HistoryStore, filters: Filters) -> int:
    found = sum(1 for _ in store.entries(filters))
    assert store.count(filters) == found
    return found


class Arm:
    """One history and what measures it (each call: one sample of each figure)."""

    def __init__(self, store: HistoryStore, history_env: dict[str, str], work: Path,
                 sandbox: Any) -> None:
        self.store, self.work, self.sandbox = store, work, sandbox
        self.history_env = history_env
        # as an installed walletctl runs: its bytecode kept (a machine that sets
        # PYTHONDONTWRITEBYTECODE would otherwise compile every module in every process)
        self.child = {k: v for k, v in env(work, history_env).items()
                      if k != "PYTHONDONTWRITEBYTECODE"}
        self.child["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        self.size = 0
        self.batches = 0

    def grow(self, size: int) -> float:
        """Append entries up to ``size`` (1,000 per transaction); the seconds it took."""
        began = time.perf_counter()
        for at in range(self.size, size, 1000):
            numbers = range(at, min(at + 1000, size))
            ids = self.store.begin_many(intent(i) for i in numbers)
            self.store.complete_many([
                (e, Completion(time=when(i), outcome="approved", http_status=200))
                for i, e in zip(numbers, ids, strict=True) if i not in UNKNOWN])
        self.size = size
        return time.perf_counter() - began

    def batch(self) -> float:
        self.batches += 1
        refs = [f"B{self.size}-{self.batches}-{i:05d}" for i in range(BATCH_ROWS)]
        cfg = profile(self.work / "profile", self.sandbox.url)
        summary = batch_run(self.work, cfg, refs, 16, reset=(self.sandbox, refs),
                            extra_env=self.history_env)
        return float(summary["rows"]) / float(summary["elapsed_s"])

    def dup_check(self) -> float:
        fresh = [Intent(**{**vars(intent(0)), "original_ref": f"N-{i}",
                           "new_ref": f"N-{i}-R1"}) for i in range(500)]
        return timed(lambda: self.store._begun(fresh)) * 1000

    def queries(self) -> dict[str, float]:
        probe = ref(self.size // 2)
        assert listing(self.store, Filters(ref=probe)) == 1
        assert listing(self.store, Filters(outcome="unknown")) == len(UNKNOWN)
        return {"--ref query ms": timed(
                    lambda: listing(self.store, Filters(ref=probe))) * 1000,
                "--unknown query ms": timed(
                    lambda: listing(self.store, Filters(outcome="unknown"))) * 1000}

    def processes(self) -> dict[str, float]:
        figures = {}
        for name, argv in (("--ref", ["history", "--ref", ref(self.size // 2), "-o", "json"]),
                           ("--unknown", ["history", "--unknown", "-o", "json"])):
            figures[f"{name} process s"], figures[f"{name} process cpu s"] = run_s(
                argv, self.child)
        return figures

    def listings(self) -> dict[str, float]:
        """The whole history piped out as JSON and as CSV: first byte, peak RSS (MiB)."""
        figures = {}
        for fmt in ("json", "csv"):
            rss = self.work / "listing-rss.json"
            began = time.perf_counter()
            child = subprocess.Popen(
                [PY, str(BENCH / "peak_rss.py"), str(rss), PY, "-m", "walletctl", "-o", fmt,
                 "history"], env=self.child, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert child.stdout is not None
            first = child.stdout.read(1)
            figures[f"-o {fmt} first byte s"] = time.perf_counter() - began
            size = len(first)
            while chunk := child.stdout.read(1 << 20):
                size += len(chunk)
            if child.wait() != 0 or size < self.size * 50:
                raise SystemExit(f"walletctl -o {fmt} history: status {child.returncode}, "
                                 f"{size} bytes for {self.size} entries")
            figures[f"-o {fmt} peak MiB"] = json.loads(rss.read_text())["maxrss_kib"] / 1024
        return figures

    def verify(self) -> dict[str, float]:
        head = self.store.head()
        assert head is not None
        event = max(head.event - 20_000, 1)  # a 10k history has 19,990 events
        kept = self.store.hashes([event])[event]
        anchors = self.work / "anchors.jsonl"
        anchors.write_text(json.dumps({"event": event, "entry": 1, "hash": kept,
                                       "time": when(0), "history": self.store.where}) + "\n")
        walked = timed(lambda: self.store.verify((event, kept)))
        wall, cpu = run_s(["history", "verify", "--anchor", str(anchors), "-o", "json"],
                          self.child)
        return {"verify --anchor walk ms": walked * 1000,
                "verify --anchor s": wall, "verify --anchor cpu s": cpu}


def measure(base: Arm, grown: Arm) -> dict[str, tuple[float, float]]:
    """Each figure on both arms, round after round: (baseline's, grown's)."""
    samples: dict[str, tuple[list[float], list[float]]] = {}

    def add(figures: dict[str, float], at: int) -> None:
        for name, value in figures.items():
            samples.setdefault(name, ([], []))[at].append(value)

    for arm in (base, grown):  # warm-up: bytecode written, pages cached
        arm.processes()
        arm.verify()
    for _ in range(3):
        for at, arm in enumerate((base, grown)):
            add({"batch rows/s": arm.batch()}, at)
            add(arm.verify(), at)
    for _ in range(5):
        for at, arm in enumerate((base, grown)):
            add(arm.processes(), at)
    for at, arm in enumerate((base, grown)):  # once each: a 1M listing takes a while
        add(arm.listings(), at)
    for _ in range(15):
        for at, arm in enumerate((base, grown)):
            add({"dup check ms": arm.dup_check(), **arm.queries()}, at)
    pick = {"batch rows/s": max}  # best of; the others: median
    return {name: tuple(pick.get(name, statistics.median)(s) for s in pair)  # type: ignore[misc]
            for name, pair in samples.items()}


@contextmanager
def backend(name: str, work: Path) -> Iterator[tuple[HistoryStore, dict[str, str]]]:
    """An empty history of this backend, and the environment that points walletctl at it."""
    work.mkdir(parents=True)
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
    lines = [f"{name}: baseline (10k entries) / grown history, and the ratio grown/baseline"]
    with backend(name, work / "base") as (store, history_env):
        base = Arm(store, history_env, work / "base", sandbox)
        base.grow(10_000)
        with backend(name, work / "grown") as (grown_store, grown_env):
            grown = Arm(grown_store, grown_env, work / "grown", sandbox)
            for size in sizes:
                built = grown.grow(size)
                print(f"[{name}] grown to {size:,} entries (+{built:.0f} s)", file=sys.stderr)
                figures = measure(base, grown)
                print(f"[{name}] {size:,}: {figures}", file=sys.stderr)
                lines.append(f"  at {size:,} entries (grown in {built:.0f} s):")
                for figure, (at_base, at_size) in figures.items():
                    lines.append(f"    {figure:<30}{shown(at_base):>9} {shown(at_size):>9}  "
                                 f"ratio {at_size / at_base:5.2f}")
    return lines


def shown(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}" if value >= 1 else f"{value:.3f}"


# ---- --suite log (issue 45) -------------------------------------------------------------
def first_line(argv: list[str], child_env: dict[str, str], skip: int = 0) -> float:
    """Seconds until a whole ``walletctl`` process prints its first line after ``skip``
    lines (a header); the process is then stopped."""
    began = time.perf_counter()
    child = subprocess.Popen([PY, "-m", "walletctl", *argv], env=child_env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    for _ in range(skip + 1):
        if not child.stdout.readline():
            raise SystemExit(f"walletctl {' '.join(argv)}: no line {skip + 1} "
                             f"(status {child.wait()})")
    took = time.perf_counter() - began
    child.kill()
    child.wait()
    return took


def whole(argv: list[str], child_env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    began = time.perf_counter()
    done = subprocess.run([PY, "-m", "walletctl", *argv], env=child_env, capture_output=True,
                          check=False)
    if done.returncode not in ok:
        raise SystemExit(f"walletctl {' '.join(argv)}: status {done.returncode}: "
                         f"{done.stderr[-800:].decode(errors='replace')}")
    return time.perf_counter() - began


def first_entry(store: HistoryStore, filters: Filters) -> float:
    """Seconds until the store's listing yields its first entry (then it is closed)."""
    began = time.perf_counter()
    listing = store.entries(filters)
    next(listing)
    took = time.perf_counter() - began
    listing.close()  # type: ignore[attr-defined]
    return took


def median_of(measure: Callable[[], float], runs: int = 3) -> float:
    measure()  # warm-up: bytecode written, pages cached
    return statistics.median(measure() for _ in range(runs))


def appends_per_s(store: HistoryStore, tag: str) -> float:
    """2,000 entries, begun and completed, 100 per transaction, through the store."""
    from history_seed import begin_row

    def made(i: int) -> Intent:
        row = begin_row(20)  # a refund of the bench merchant, 7.50 EUR
        return Intent(**{**row, "original_ref": f"A{tag}{i:06d}",
                         "new_ref": f"A{tag}{i:06d}-R1"})

    began = time.perf_counter()
    for k in range(20):
        ids = store.begin_many([made(k * 100 + n) for n in range(100)])
        store.complete_many([(i, Completion(time="2026-01-01T00:02:00.000Z",
                                            outcome="approved", http_status=200))
                             for i in ids])
    return 2000 / (time.perf_counter() - began)


def log_figures(child: dict[str, str], open_store: Callable[[], HistoryStore], work: Path,
                tag: str) -> dict[str, float]:
    from history_seed import OLDEST

    found: dict[str, float] = {"load average (1 min)": os.getloadavg()[0]}
    with open_store() as store:  # the listing's query alone: no process start
        for name, filters in (("history", Filters()), ("table", Filters(limit=51)),
                              ("--last 50", Filters(limit=50)),
                              ("--ref", Filters(ref=OLDEST))):
            found[f"{name} first row, in process ms"] = 1000 * median_of(
                partial(first_entry, store, filters), runs=5)
    table = {**child, "COLUMNS": "120"}
    found["history (table) first row s"] = median_of(
        lambda: first_line(["-o", "table", "history"], table))
    for name, argv in (("--last 50", ["--last", "50"]), ("-o csv", []),
                       ("--ref", ["--ref", OLDEST])):
        found[f"history {name} first row s"] = median_of(
            partial(first_line, ["-o", "csv", "history", *argv], child, skip=1))
    # the gateway has a pre-authorisation of the order, the history ten entries: they
    # disagree (exit 13), which is what the order command is for
    found["order first row s"] = median_of(
        lambda: first_line(["-o", "json", "order", OLDEST], child))
    bundle = work / "order-1.ndjson"
    found["order --evidence s"] = median_of(
        lambda: whole(["-o", "json", "order", OLDEST, "--evidence", str(bundle)], child,
                      ok=(0, 13)))
    found["bundle KiB"] = bundle.stat().st_size / 1024
    found["check-evidence s"] = median_of(
        lambda: whole(["history", "check-evidence", str(bundle)], child))
    rss = work / "rss.json"
    subprocess.run([PY, str(BENCH / "peak_rss.py"), str(rss), PY, "-m", "walletctl",
                    "history", "check-evidence", str(bundle)], env=child,
                   capture_output=True, check=True)
    found["check-evidence peak RSS MiB"] = json.loads(rss.read_text())["maxrss_kib"] / 1024
    found["anchor s"] = median_of(lambda: whole(["history", "anchor"], child))
    anchors = work / "anchors.jsonl"
    anchors.write_text(subprocess.run([PY, "-m", "walletctl", "history", "anchor"], env=child,
                                      capture_output=True, check=True).stdout.decode())
    with open_store() as store:
        found["appends/s"] = max(appends_per_s(store, f"{tag}{k}") for k in range(2))
    with anchors.open("a") as out:
        out.write(subprocess.run([PY, "-m", "walletctl", "history", "anchor"], env=child,
                                 capture_output=True, check=True).stdout.decode())
    found["verify --anchor (2 checkpoints) s"] = median_of(
        lambda: whole(["history", "verify", "--anchor", str(anchors)], child))
    found["verify --anchor --full (2 checkpoints, full walk) s"] = whole(
        ["history", "verify", "--anchor", str(anchors), "--full"], child)
    found["load average (1 min)"] = max(found["load average (1 min)"], os.getloadavg()[0])
    return found


@contextmanager
def seeded(name: str, work: Path) -> Iterator[tuple[Callable[[int], float],
                                                    Callable[[], HistoryStore],
                                                    dict[str, str]]]:
    """An empty history of this backend: (grow to N entries -> seconds, open its store,
    the environment that points walletctl at it)."""
    from history_seed import seed_postgresql, seed_sqlite

    work.mkdir(parents=True)
    have = 0
    if name == "sqlite":
        from walletctl.history.sqlite import SqliteHistory

        path = work / "history.sqlite3"

        def grow_file(size: int) -> float:
            nonlocal have
            began = time.perf_counter()
            with SqliteHistory(path) as store:
                seed_sqlite(store, have, size)
            have = size
            return time.perf_counter() - began

        yield grow_file, lambda: SqliteHistory(path), {"WALLETCTL_AUDIT_LOG": str(path)}
        return
    from pg_server import owned_history

    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    with owned_history(work) as (url, pg_env, owner):
        os.environ.update(pg_env)

        def grow_db(size: int) -> float:
            nonlocal have
            began = time.perf_counter()
            with owner() as db:
                seed_postgresql(db, "alice", have, size)
            have = size
            return time.perf_counter() - began

        yield (grow_db, lambda: PostgresHistory(parse_db_url(url), purpose="history_scale"),
               {**pg_env, "WALLETCTL_HISTORY_URL": url})


def run_log(name: str, sizes: list[int], work: Path, sandbox: Any) -> list[str]:
    from history_seed import OLDEST

    from batch import seed as seed_gateway

    results: dict[int, dict[str, float]] = {}
    cfg = profile(work / "profile", sandbox.url)
    with seeded(name, work / "history") as (grow, open_store, history_env):
        child = {k: v for k, v in env(work, history_env).items()
                 if k != "PYTHONDONTWRITEBYTECODE"}
        child.update(PYTHONPYCACHEPREFIX=str(work / "pycache"),
                     WALLETCTL_CONFIG=str(cfg))
        for size in sizes:
            took = grow(size)
            print(f"[{name}] seeded to {size:,} entries in {took:.0f} s", file=sys.stderr)
            seed_gateway(sandbox, [OLDEST])
            results[size] = log_figures(child, open_store, work, f"{size // 1000}k")
            print(f"[{name}] {size:,}: {results[size]}", file=sys.stderr)
    first = min(results)
    lines = [f"{name}: " + " | ".join(f"{s:,}" for s in sizes)
             + " | ratio to " + f"{first:,}"]
    for figure in results[first]:
        values = [results[s][figure] for s in sizes]
        base = values[0]
        lines.append(f"  {figure:<46}" + " ".join(f"{shown(v):>9}" for v in values)
                     + (f"  {values[-1] / base:5.2f}" if base else ""))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append",
                        help="sizes of the grown history in entries (repeat; default "
                             "10000 and 100000, with --suite log 10000 and 1000000; the "
                             "batch suite's baseline is always 10000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--suite", choices=("batch", "log"), default="batch",
                        help="batch: the batch path and full listings (issue 37); log: "
                             "the transparency log's figures (issue 45)")
    args = parser.parse_args()
    log = args.suite == "log"
    sizes = sorted(set(args.size or ([10_000, 1_000_000] if log else [10_000, 100_000])))
    if sizes[0] < 10_000 or any(s % 1000 for s in sizes):
        parser.error("--size: whole thousands, 10000 or more")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a stopped run cleans up too
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    names = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    work = Path(tempfile.mkdtemp(prefix="walletctl-history-scale-"))
    report: list[str] = []
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
            for name in names:
                report += (run_log if log else run)(name, sizes, work / name, sandbox)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(report))


if __name__ == "__main__":
    main()
