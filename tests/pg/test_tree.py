"""The history's Merkle tree on a shared history (a real PostgreSQL server): grown with the
events, every size 1..1000 against the reference, filled by setup for a history written
before it, and no node written ahead of the events it covers."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pg_fixtures import PgDesk
from tree_checks import check_every_size, grow, intent
from walletctl.config.dburl import parse_db_url
from walletctl.history.postgres import PostgresHistory, setup


@pytest.fixture
def alice(pg_desk: PgDesk, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> PostgresHistory:
    cluster = pg_desk.cluster
    monkeypatch.setenv("PGPASSFILE", str(cluster.write_pgpass(tmp_path / "o", "desk_owner")))
    setup(parse_db_url(pg_desk.url("desk_owner")), ["alice"])
    monkeypatch.setenv("PGPASSFILE", str(cluster.write_pgpass(tmp_path / "a", "alice")))
    return PostgresHistory(parse_db_url(pg_desk.url("alice")))


def test_every_size_1_to_1000_against_the_reference(alice: PostgresHistory) -> None:
    with alice as store:
        grow(store)
        check_every_size(store)
        assert store.verify() == (1000, None)


def test_setup_fills_the_tree_of_events_written_before_it(
        alice: PostgresHistory, pg_desk: PgDesk, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with alice as store:
        grow(store, 30)
        before = store.tree_root(30)
    with pg_desk.connect("desk_owner") as db, db.transaction():
        db.execute("ALTER TABLE walletctl.merkle_nodes DISABLE TRIGGER merkle_nodes_append_only")
        db.execute("DELETE FROM walletctl.merkle_nodes")
        db.execute("ALTER TABLE walletctl.merkle_nodes ENABLE TRIGGER merkle_nodes_append_only")
    monkeypatch.setenv("PGPASSFILE", str(pg_desk.cluster.write_pgpass(tmp_path / "o",
                                                                       "desk_owner")))
    setup(parse_db_url(pg_desk.url("desk_owner")), [])
    monkeypatch.setenv("PGPASSFILE", str(pg_desk.cluster.write_pgpass(tmp_path / "a", "alice")))
    with PostgresHistory(parse_db_url(pg_desk.url("alice"))) as store:
        assert store.tree_root(30) == before
        store.begin(intent(77))
        assert store.verify() == (31, None)


def test_no_node_ahead_of_the_events_and_none_changed(alice: PostgresHistory,
                                                      pg_desk: PgDesk) -> None:
    with alice as store:
        grow(store, 3)
    with pg_desk.connect("alice") as db:
        with pytest.raises(psycopg.errors.CheckViolation, match="not in the chain"):
            db.execute("INSERT INTO walletctl.merkle_nodes VALUES (0, 3, %s)", (b"\x01" * 32,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("UPDATE walletctl.merkle_nodes SET hash = %s", (b"\x02" * 32,))
