"""Every query a local history makes on the append path and for a look-up is answered from
an index (SQLite's EXPLAIN QUERY PLAN, for the statements actually run and for each
statement of the triggers), so that no change brings back a walk over every event: the
cost of an append or a look-up stays the same at 10k entries or 10M (benchmarks/
history_scale.py measures it)."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

from plan_checks import appends, intent, look_ups
from walletctl.history.approvals import get, listing, reserved_refs
from walletctl.history.policy import PolicyRefusal
from walletctl.history.rulebook import change
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent

# A walk over a whole table is allowed only for these: the rulebook (a handful of keys),
# a subquery's own few rows (the --last wrapper), a constant.
ALLOWED_SCANS = {"SCAN policy", "SCAN last_n", "SCAN CONSTANT ROW"}
STEP = Intent(time="2026-11-25T10:00:00.000Z", os_user="me", host="h", profile="p",
              base_url="u", operation="policy", outcome="approved", exit_code=0)


def scans(db: sqlite3.Connection, sql: str) -> list[str]:
    """The plan's walks over a whole table (or a whole index): ``SCAN x`` lines."""
    plan = [str(row[3]) for row in db.execute("EXPLAIN QUERY PLAN " + sql)]
    return [line for line in plan
            if line.startswith("SCAN ") and line not in ALLOWED_SCANS]


def _traced(path: Path, chained: bool = True) -> list[str]:
    """The statements a workload runs on the file (bound values written into them)."""
    seen: list[str] = []
    with contextlib.closing(SqliteHistory(path, chained=chained)) as store:
        change(store, "approvals.refund", "100", step=STEP)
        with sqlite3.connect(path) as db:  # a spent batch approval, as a file's owner can
            db.execute(
                "INSERT INTO approvals (id, kind, merchant_id, store_id, operation, "
                "created_at, expires_at, requester, request_hash, state, decided_by, "
                "spent_batch) VALUES (1, 'batch', 'M-1', 'S-1', 'refund', '2026', '2999', "
                "'me', 'x', 'spent', 'you', 'B1')")
            db.execute("INSERT INTO approval_rows VALUES (1, 2, 'ORD-500', '150.00', 'EUR')")
        store._db.set_trace_callback(seen.append)
        appends(store)
        if chained:
            look_ups(store)
        # what the rulebook decides is its own test's; here, that its queries ran
        with contextlib.suppress(PolicyRefusal):
            store.begin_many([intent(500, amount="150.00", approval=1, batch_id="B1",
                                     reason="bound row")])
        get(store, 1)
        reserved_refs(store, merchant=("M-1", "S-1"), original_ref="ORD-1", now="2026")
        list(listing(store, now="2026", original_ref="ORD-1"))
        store._db.set_trace_callback(None)
    return list(dict.fromkeys(seen))


def test_every_statement_of_the_append_path_and_the_look_ups_uses_an_index(
        tmp_path: Path) -> None:
    statements = _traced(tmp_path / "h.sqlite3") + _traced(tmp_path / "i.sqlite3", False)
    checked = 0
    with sqlite3.connect(tmp_path / "h.sqlite3") as db:
        for sql in statements:
            if sql.startswith(("BEGIN", "COMMIT", "ROLLBACK", "--")) or re.match(
                    r"INSERT INTO \w+ \([^)]*\) VALUES", sql):
                continue  # no read in it (its triggers are checked below)
            assert scans(db, sql) == [], sql
            checked += 1
    assert checked >= 30
    # the duplicate check: two index look-ups, never the walk over every completion
    duplicate = next(s for s in statements if "(new_ref || '') IS NULL" in s)
    with sqlite3.connect(tmp_path / "h.sqlite3") as db:
        plan = " ".join(str(r[3]) for r in db.execute("EXPLAIN QUERY PLAN " + duplicate))
    assert "MULTI-INDEX OR" in plan, plan
    assert "events_ref (original_ref=?)" in plan, plan
    assert any("DELETE FROM events WHERE entry" in s for s in statements)  # intent store


def test_every_statement_of_the_triggers_uses_an_index(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with SqliteHistory(path) as store:
        appends(store)
    with sqlite3.connect(path) as db:
        triggers = [str(row[0]) for row in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
        # the entries' outcomes (4), and the file's own checks of every write (V6's parity)
        assert len(triggers) > 4
        for trigger in triggers:
            body = trigger[trigger.index(" BEGIN") + 6:trigger.rindex("END")]
            when = re.search(r"\bWHEN (.*) BEGIN", trigger, re.S)
            statements = [s for s in body.split(";") if s.strip()
                          and not s.strip().startswith("SELECT RAISE")]
            if when is not None:  # its condition, asked before each row
                statements.append(f"SELECT 1 WHERE {when.group(1)}")
            for statement in statements:
                sql = re.sub(r"\b(NEW|OLD)\.\w+", "1", statement)
                assert scans(db, sql) == [], sql
