"""Issue 31's "one intent log": the batch journal as it is, against the journal as a view over
the history: rows/s of the same batch (stub gateway, +50 ms), the arms alternated in every
round, best of N, with the history in a SQLite file and (``--postgres``) in a PostgreSQL
database over loopback; and (``--costs``) what each record's writes and reads cost a row.

    python benchmarks/intent_log.py --postgres          # about 10 minutes on a quiet machine
    python benchmarks/intent_log.py --costs --postgres  # about a minute

The view is a prototype kept here, not in walletctl (:class:`HistoryView`, put in place of
the journal in a child ``walletctl`` by ``--as-walletctl``): the plan (key ``ref#n``, line,
new reference, amount, the run that saw it) in a ``batch_plan`` table of the history's
database, a row's state derived from its history entry (no entry: planned; begun: sent;
completed: confirmed / refused / unknown), this run's transitions in memory. It serves the
benchmark's path (fresh rows sent directly) and no more: changed rows, dry runs, the history
switched off, transaction ids and attempts are not kept (docs/batch.md, "One writer for
the journal and the history", says what else the history would have to hold).
Both view arms keep every row of the run in memory (no read of the history per send: their
best case, not the journal's flat-memory target). Arms: ``journal`` (today), ``view`` (a
direct row's ``ref#1`` check is one read of the history), ``view-folded`` (that check folded
into the page query).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

from walletctl.history.batch_store import lock_journal  # noqa: E402
from walletctl.history.store import HistoryStore, Transaction  # noqa: E402
from walletctl.ops.batch.input_rows import Op, Problem, Row  # noqa: E402
from walletctl.ops.batch.journal import (  # noqa: E402
    Journal,
    JournalRow,
    State,
    derive_reference,
)

VIEW_ENV = "WALLETCTL_BENCH_JOURNAL_VIEW"
ARMS = {"journal": "", "view": "reads", "view-folded": "folded"}  # arm -> VIEW_ENV
PLAN_TABLE = """CREATE TABLE IF NOT EXISTS batch_plan (
    batch_id TEXT NOT NULL, key TEXT NOT NULL, ref TEXT NOT NULL, occ INTEGER NOT NULL,
    line INTEGER NOT NULL, new_ref TEXT NOT NULL, amount TEXT NOT NULL,
    currency TEXT NOT NULL, profile TEXT, seen INTEGER NOT NULL,
    PRIMARY KEY (batch_id, key))"""
PLAN_INDEX = "CREATE INDEX IF NOT EXISTS batch_plan_seen ON batch_plan (batch_id, seen, line)"
# a row's plan, its history entry's outcome now (entry_outcome: kept by both backends), and
# whether its original has a second row (``ref#1``)
_ROW = """SELECT p.key, p.line, p.ref, p.new_ref, p.amount, p.currency, p.profile,
    b.entry, s.outcome, s.last_complete, COALESCE(c.note, b.note),
    EXISTS (SELECT 1 FROM batch_plan q WHERE q.batch_id = p.batch_id AND q.key = p.ref || '#1')
FROM batch_plan p
LEFT JOIN events b ON b.kind = 'begin' AND b.new_ref = p.new_ref AND b.batch_id = p.batch_id
LEFT JOIN entry_outcome s ON s.entry = b.entry
LEFT JOIN events c ON c.seq = s.last_complete
WHERE p.batch_id = ? """
_STATE_OF: dict[str, State] = {"approved": "confirmed", "declined": "refused",
                               "refused": "refused", "unknown": "unknown", "error": "planned"}


class HistoryView(Journal):
    """The journal's interface over the history (see the module's docstring)."""

    def __init__(self, path: Path, *, batch_id: str, op: Op, source: str,
                 store: HistoryStore) -> None:
        self.path, self.batch_id, self.op, self.store = path, batch_id, op, store
        self._closed = False
        self._lock_fd = lock_journal(path)  # the run lock stays a lock on a file
        self._tx: Transaction | None = None
        self._overlay: dict[str, JournalRow] = {}  # this run's transitions, in memory
        self.folded = os.environ.get(VIEW_ENV) == "folded"
        self._alone: set[str] = set()  # originals with one row (folded: no ref#1 read)
        found = store.read_one("SELECT max(seen) FROM batch_plan WHERE batch_id = ?",
                               (batch_id,))
        self.existed = bool(found and found[0])
        self.run = (int(found[0]) if found and found[0] else 0) + 1

    def _to_row(self, r: tuple[Any, ...]) -> JournalRow:
        key, line, ref, new_ref, amount, currency, profile, entry, outcome, done, note, \
            shared = r
        if self.folded and not shared:
            self._alone.add(ref)
        state: State = "planned"
        if entry is not None:
            state = "sent" if outcome == "unknown" and done is None else \
                _STATE_OF.get(outcome, "unknown")
        return JournalRow(key, line, ref, new_ref, Decimal(amount), currency, profile, state,
                          0 if entry is None else 1, None, None, note)

    def begin(self) -> None:
        self._cm = self.store.transaction()
        self._tx = self._cm.__enter__()

    def commit(self) -> None:
        if self._tx is not None:
            self._tx = None
            self._cm.__exit__(None, None, None)

    def rollback(self) -> None:
        if self._tx is not None:
            self._tx = None
            self._cm.__exit__(RuntimeError, RuntimeError("rolled back"), None)

    def plan(self, row: Row) -> Problem | JournalRow:
        tx = self._tx
        assert tx is not None
        counted = tx.read_one("SELECT count(*) FROM batch_plan WHERE batch_id = ? AND seen = ? "
                              "AND ref = ?", (self.batch_id, self.run, row.ref))
        occ = int(counted[0]) if counted else 0
        key = f"{row.ref}#{occ}"
        new_ref = row.new_ref or derive_reference(self.batch_id, self.op, row.ref, occ)
        if tx.read_one("SELECT 1 FROM batch_plan WHERE batch_id = ? AND key = ?",
                       (self.batch_id, key)) is None:
            tx.execute("INSERT INTO batch_plan (batch_id, key, ref, occ, line, new_ref, amount, "
                       "currency, profile, seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (self.batch_id, key, row.ref, occ, row.line, new_ref, str(row.amount),
                        row.currency, row.profile, self.run))
            return JournalRow(key, row.line, row.ref, new_ref, row.amount, row.currency,
                              row.profile, "planned", 0, None, None, None)
        tx.execute("UPDATE batch_plan SET line = ?, seen = ? WHERE batch_id = ? AND key = ?",
                   (row.line, self.run, self.batch_id, key))
        found = tx.read_one(_ROW + "AND p.key = ?", (self.batch_id, key))
        assert found is not None
        return self._to_row(found)

    def rows(self, page: int = 500) -> Iterator[JournalRow]:
        last = -1
        while True:
            chunk = list(self.store.read(
                _ROW + "AND p.seen = ? AND p.line > ? ORDER BY p.line LIMIT ?",
                (self.batch_id, self.run, last, page)))
            if not chunk:
                return
            for r in chunk:
                # kept: no read of the history per send (memory grows with the rows)
                yield self._overlay.setdefault((row := self._to_row(r)).key, row)
            last = int(chunk[-1][1])

    def get(self, key: str) -> JournalRow | None:
        if key in self._overlay:
            return self._overlay[key]
        ref, _, occ = key.rpartition("#")
        if occ == "1" and ref in self._alone:
            return None
        found = self.store.read_one(_ROW + "AND p.key = ?", (self.batch_id, key))
        return None if found is None else self._to_row(found)

    def mark_sent_many(self, keys: list[str]) -> None:
        """Nothing written: the history's begun entries (the same group write) are 'sent'."""
        for key in keys:
            if (now := self.get(key)) is not None:
                self._overlay[key] = replace(now, state="sent", attempts=now.attempts + 1)

    def finish(self, key: str, state: State, *, txn_id: str | None = None,
               txn_state: str | None = None, detail: str | None = None) -> None:
        """Nothing written: the history's completion records the outcome."""
        if (now := self.get(key)) is not None:
            self._overlay[key] = replace(now, state=state, txn_id=txn_id, txn_state=txn_state,
                                         detail=detail)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("planned", "sent", "confirmed", "refused", "unknown"), 0)
        for row in self.rows():
            out[self._overlay.get(row.key, row).state] += 1
        return out

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.commit()
            self.store.close()
            os.close(self._lock_fd)


def as_walletctl(argv: list[str]) -> None:
    """``walletctl ARGV``, with the journal replaced by the view when VIEW_ENV is set."""
    sys.argv = ["walletctl", *argv]
    if os.environ.get(VIEW_ENV):
        from walletctl.history import open_for
        from walletctl.ops.batch import job

        held: dict[str, Any] = {}
        original_init = job._Job.__init__

        def init(self: Any, ask: Any, desk: Any, profiles: Any, *rest: Any) -> None:
            held["profile"] = profiles.profile
            original_init(self, ask, desk, profiles, *rest)

        def open_journal(ask: Any, path: Path, batch_id: str, display: str,
                         scratch: Path) -> Journal:
            store = open_for(held["profile"], purpose="benchmark: the journal as a view")
            return HistoryView(path, batch_id=batch_id, op=ask.op, source=display, store=store)

        job._Job.__init__ = init  # type: ignore[method-assign,assignment]
        job._open_journal = open_journal
    from walletctl.cli.main import run

    run()


class Histories:
    """(name, the child's environment) of each history the arms run on; the plan table made
    in each (on PostgreSQL by its owner, granted to the operator)."""

    def __init__(self, work: Path, postgres: bool) -> None:
        self.work, self.postgres = work, postgres
        self._pg: Any = None

    def __enter__(self) -> list[tuple[str, dict[str, str]]]:
        from walletctl.history import FILE_NAME, data_dir, open_history

        os.environ.update(HOME=str(self.work), XDG_CONFIG_HOME=str(self.work / ".config"))
        os.environ.pop("XDG_DATA_HOME", None)  # data_dir() as the children see it
        local = data_dir() / FILE_NAME
        open_history(local).close()  # the history's own tables first
        with sqlite3.connect(local) as db:
            db.execute(PLAN_TABLE)
            db.execute(PLAN_INDEX)
        out: list[tuple[str, dict[str, str]]] = [("sqlite", {})]
        if self.postgres:
            import psycopg
            from pg_server import shared_history

            self._pg = shared_history(self.work)
            url, pg_env = self._pg.__enter__()
            os.environ["PGPASSFILE"] = str(self.work / "owner" / ".pgpass")
            with psycopg.connect(url.replace("alice", "desk_owner", 1), autocommit=True) as pg:
                pg.execute("SET search_path = walletctl")
                pg.execute(PLAN_TABLE)
                pg.execute(PLAN_INDEX)
                pg.execute("GRANT SELECT, INSERT, UPDATE ON walletctl.batch_plan TO alice")
            out.append(("postgresql", {**pg_env, "WALLETCTL_HISTORY_URL": url}))
        return out

    def __exit__(self, *exc: object) -> None:
        if self._pg is not None:
            self._pg.__exit__(None, None, None)


def compare(reps: int, postgres: bool, sizes: list[tuple[int, int]]) -> None:
    import batch as bench  # this directory's batch benchmark: its stub gateway and runs

    work = Path(tempfile.mkdtemp(prefix="walletctl-intent-log-"))
    lines: list[str] = []
    launcher = [sys.executable, __file__, "--as-walletctl"]
    try:
        with bench.stub_gateway(50) as stub_url, Histories(work, postgres) as histories:
            cfg = bench.profile(work / "stub", stub_url)
            for where, extra_env in histories:
                for conc, n in sizes:
                    got: dict[str, list[float]] = {arm: [] for arm in ARMS}
                    for rep in range(reps):
                        for arm, flag in ARMS.items():
                            env = {**extra_env, VIEW_ENV: flag} if flag else extra_env
                            refs = [f"I{where[0]}{arm[-1]}{conc}r{rep}-{i:07d}" for i in range(n)]
                            s = bench.batch_run(work, cfg, refs, conc, launcher=launcher,
                                                fresh_journal=True, extra_env=env)
                            assert s["confirmed"] == n, s
                            got[arm].append(s["rows"] / s["elapsed_s"])
                            print(f"[{where}] c={conc} {arm} round {rep}: {got[arm][-1]:.0f} "
                                  f"rows/s (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
                    today = max(got["journal"])
                    lines.append(f"{where:<10} c={conc:<3} {n:>5} rows: " + ", ".join(
                        f"{arm} {max(got[arm]):.0f} rows/s ({max(got[arm]) / today:.2f})"
                        for arm in ARMS) + "; every round: " + "; ".join(
                        f"{arm} {[round(x) for x in got[arm]]}" for arm in ARMS))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"journal vs the journal as a view over the history, stub gateway +50 ms, best of "
          f"{reps} alternated rounds, load average {os.getloadavg()[0]:.2f}")
    for line in lines:
        print("  " + line)


def write_costs(postgres: bool, rows: int = 2000, group: int = 8) -> None:
    """Microseconds per row of each record's writes and reads, in this process, in groups of
    ``group`` rows (what one event-loop turn sends at c=8): the journal's ``sent`` and
    outcome, the history's begun entry and completion, one indexed read of each."""
    from walletctl.config.dburl import parse_db_url
    from walletctl.history import open_history, open_shared
    from walletctl.history.store import Completion, Intent

    work = Path(tempfile.mkdtemp(prefix="walletctl-intent-costs-"))
    out: list[str] = []

    def timed(what: str, started: float) -> None:
        out.append(f"{what:<44} {(time.perf_counter() - started) / rows * 1e6:6.0f} us/row")

    try:
        jr = Journal(work / "j.journal", batch_id="b" * 16, op="capture", source="bench")
        jr.begin()
        planned = [jr.plan(Row(i + 2, f"R-{i:07d}", Decimal("7.50"), "EUR")) for i in range(rows)]
        jr.commit()
        keys = [row.key for row in planned if isinstance(row, JournalRow)]
        started = time.perf_counter()
        for at in range(0, rows, group):
            jr.mark_sent_many(keys[at:at + group])
            for key in keys[at:at + group]:
                jr.finish(key, "confirmed", txn_id="T", txn_state="Approved")
        jr.commit()
        timed("journal: sent (group commit) + outcome", started)
        started = time.perf_counter()
        for key in keys:
            jr.get(key.replace("#0", "#1"))
        timed("journal: a direct row's ref#1 read", started)
        jr.close()

        stores: list[tuple[str, HistoryStore]] = [("sqlite", open_history(work / "h.sqlite3"))]
        pg: Any = None
        if postgres:
            from pg_server import shared_history

            pg = shared_history(work)
            url, pg_env = pg.__enter__()
            os.environ.update(pg_env)
            stores.append(("postgresql", open_shared(parse_db_url(url))))
        for where, store in stores:
            intents = [Intent(time="2026-01-01T00:00:00.000Z", os_user="u", host="h",
                              profile="bench", base_url="http://x", operation="capture",
                              original_ref=f"R-{i:07d}", new_ref=f"cap-{where}-{i:07d}",
                              amount="7.50", currency="EUR", batch_id="b" * 16,
                              batch_row=i + 2, merchant_id="M", store_id="S")
                       for i in range(rows)]
            done: list[tuple[int, Completion]] = []
            started = time.perf_counter()
            for at in range(0, rows, group):
                ids = store.append_many(intents[at:at + group], done)
                done = [(e, Completion(time="2026-01-01T00:00:00.050Z", outcome="approved"))
                        for e in ids]
            store.append_many([], done)
            timed(f"history ({where}): begun entry + completion", started)
            started = time.perf_counter()
            for intent in intents:
                store.read_one("SELECT entry FROM events WHERE new_ref = ? AND kind = 'begin'",
                               (f"{intent.new_ref}#1",))
            timed(f"view ({where}): one indexed read", started)
            store.close()
        if pg is not None:
            pg.__exit__(None, None, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"cost per row of each record's writes and reads, {rows} rows in groups of {group}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for line in out:
        print("  " + line)


def main() -> None:
    if sys.argv[1:2] == ["--as-walletctl"]:
        as_walletctl(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="rounds (each runs every arm)")
    ap.add_argument("--postgres", action="store_true", help="a PostgreSQL history too")
    ap.add_argument("--rows", type=int, default=400, help="rows at c=8 (c=64: eight times)")
    ap.add_argument("--concurrency", type=int, action="append",
                    help="run at this concurrency only (repeatable; default: 8 and 64)")
    ap.add_argument("--costs", action="store_true",
                    help="only: each record's writes and reads per row, in this process")
    args = ap.parse_args()
    started = time.monotonic()
    if args.costs:
        write_costs(args.postgres)
    else:
        compare(args.reps, args.postgres,
                [(c, args.rows * c // 8) for c in args.concurrency or (8, 64)])
    print(f"  ({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
