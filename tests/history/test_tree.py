"""The history's Merkle tree on a local file (walletctl.history.tree): grown with the
events, O(log n) nodes a proof, filled for a file written before it, checked by verify."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from merkle_reference import Reference
from tree_checks import check_every_size, grow, intent, leaves
from walletctl.history import open_history
from walletctl.history.chain import ALL
from walletctl.history.merkle import Frontier
from walletctl.history.tree import TreeError


def test_every_size_1_to_1000_against_the_reference(tmp_path: Path) -> None:
    with open_history(tmp_path / "h.sqlite3") as store:
        grow(store)
        check_every_size(store)
        assert store.verify() == (1000, None)


def test_nodes_stay_about_two_per_event(tmp_path: Path) -> None:
    with open_history(tmp_path / "h.sqlite3") as store:
        grow(store, 300)
        count = store.read_one("SELECT count(*) FROM merkle_nodes")
    assert count is not None
    assert count[0] < 600


def test_a_file_written_before_the_tree_is_filled_at_its_next_open(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with open_history(path) as store:
        grow(store, 40)
        before = store.tree_root(40)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE merkle_nodes")
    with open_history(path) as store:
        assert store.tree_root(40) == before
        store.begin(intent(99))
        assert store.verify() == (41, None)


def test_verify_names_a_node_that_does_not_match_the_events(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with open_history(path) as store:
        grow(store, 20)
    level, idx = Frontier.keys(20)[0]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE merkle_nodes SET hash = ? WHERE level = ? AND idx = ?",
                   (b"\x07" * 32, level, idx))
    with open_history(path) as store:
        count, broken = store.verify()
    assert count == 20
    assert broken is not None
    assert "Merkle tree" in broken.problem


def test_no_append_after_the_newest_events_were_deleted(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with open_history(path) as store:
        grow(store, 10)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM events WHERE seq > 7")
    with open_history(path) as store:
        assert store.verify() == (7, None)  # by itself, a shorter chain holds
        with pytest.raises(TreeError, match="holds 10 events but the chain ends at event 7"):
            store.begin(intent(50))
        assert store.verify() == (7, None)  # nothing was appended


def test_events_written_past_the_client_get_their_leaves_at_the_next_append(
        tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with open_history(path) as store:
        grow(store, 6)
        before = store.read_one("SELECT count(*) FROM merkle_nodes")
    with sqlite3.connect(path) as db:  # a copy of event 6 as event 7, by hand, no leaf
        db.execute("INSERT INTO events SELECT seq + 1, " + ", ".join(ALL)  # noqa: S608
                   + ", hash, hash FROM events WHERE seq = 6")
    with open_history(path) as store:
        store.begin(intent(70))  # the tree takes event 7's leaf, then event 8's
        assert store.tree_root(8) == Reference(leaves(store)).mth(0, 8)
        assert store.read_one("SELECT count(*) FROM merkle_nodes") != before
