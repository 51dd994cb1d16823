"""Each entry's outcome now (entry_outcome, kept by triggers beside the events): a file
written before it is filled at its first open by this version, and a listing reads the
same whether the outcome came from the triggers or from that filling."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from plan_checks import appends
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Filters


def _listed(path: Path) -> list[tuple[object, ...]]:
    with SqliteHistory(path) as store:
        return [tuple(vars(e).values()) for e in store.entries()] + [
            (e.id,) for e in store.entries(Filters(outcome="unknown"))]


def test_a_file_written_before_is_filled_at_its_first_open(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with SqliteHistory(path) as store:
        appends(store)
    before = _listed(path)
    with sqlite3.connect(path) as db:  # what an earlier walletctl left: no table, no trigger
        for name in ("begun", "completed", "deleted", "changed"):
            db.execute(f"DROP TRIGGER entry_outcome_{name}")
        db.execute("DROP TABLE entry_outcome")
    assert _listed(path) == before
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM entry_outcome").fetchone()[0] == 24


def test_a_changed_or_deleted_event_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with SqliteHistory(path) as store:
        appends(store)
    with sqlite3.connect(path) as db:
        last = db.execute("SELECT MAX(seq) FROM events WHERE kind = 'complete' "
                          "AND entry = 1").fetchone()[0]
        db.execute("DELETE FROM events WHERE seq = ?", (last,))  # entry 1's completion
        db.execute("UPDATE events SET outcome = 'declined' WHERE entry = 2 "
                   "AND kind = 'complete'")
    with SqliteHistory(path) as store:
        outcomes = {e.id: e.outcome for e in store.entries()}
        unknown = [e.id for e in store.entries(Filters(outcome="unknown"))]
        declined = [e.id for e in store.entries(Filters(outcome="declined"))]
    assert (outcomes[1], outcomes[2]) == ("unknown", "declined")
    assert 1 in unknown
    assert 2 in declined
