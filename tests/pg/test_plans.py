"""Every query a shared history makes on the append path and for a look-up is answered from
an index on PostgreSQL: the statements walletctl sends and every statement the triggers
run for them (auto_explain, nested statements included, its plans sent to the session as
notices), with sequential scans disabled and a history of some thousands of entries
analysed, so that a plan that can only walk the events (or a whole index of them) fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pg_fixtures import SUPERUSER, PgDesk
from plan_checks import appends, look_ups, prefill
from walletctl.config.dburl import parse_db_url
from walletctl.history.postgres import PostgresHistory, setup

GROWING = ("events", "entry_outcome")  # the tables that grow with the entries
EXPLAINED = {"session_preload_libraries": "auto_explain",
             "auto_explain.log_min_duration": "0",
             "auto_explain.log_nested_statements": "on",
             "auto_explain.log_format": "json", "auto_explain.log_level": "notice",
             "enable_seqscan": "off"}


def walks(node: dict[str, Any], limited: bool = False) -> Iterator[str]:
    """The plan's walks over a growing table: a sequential scan, or an index read whole
    (no condition, and no LIMIT over it)."""
    kind, table = node["Node Type"], node.get("Relation Name")
    if table in GROWING and (kind == "Seq Scan" or (
            kind in ("Index Scan", "Index Only Scan") and "Index Cond" not in node
            and not limited)):
        yield f"{kind} on {table} ({node.get('Index Name', 'no index')})"
    for child in node.get("Plans", ()):
        yield from walks(child, limited or kind == "Limit")


@pytest.fixture
def explained(pg_desk: PgDesk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> \
        Iterator[tuple[PostgresHistory, list[str]]]:
    cluster = pg_desk.cluster
    pgpass = tmp_path / ".pgpass"
    pgpass.write_text("".join(f"127.0.0.1:{cluster.port}:*:{role}:{cluster.password(role)}\n"
                              for role in ("desk_owner", "alice")))
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    setup(parse_db_url(pg_desk.url("desk_owner")), ["alice"], "operator")
    store = PostgresHistory(parse_db_url(pg_desk.url("alice")))
    try:
        prefill(store, 5000)
        with cluster.connect(SUPERUSER, pg_desk.db) as su:
            su.execute("ANALYZE")
            for name, value in EXPLAINED.items():
                su.execute(f"ALTER ROLE alice IN DATABASE {pg_desk.db} SET {name} = '{value}'")
    finally:
        store.close()
    store = PostgresHistory(parse_db_url(pg_desk.url("alice")))  # a session with them
    plans: list[str] = []
    store.db().add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
    try:
        yield store, plans
    finally:
        store.close()


def test_every_statement_and_trigger_statement_uses_an_index(
        explained: tuple[PostgresHistory, list[str]]) -> None:
    store, plans = explained
    appends(store)
    look_ups(store)
    found: dict[str, list[str]] = {}
    for text in plans:
        plan = json.loads(text[text.index("{"):])
        found[" ".join(plan["Query Text"].split())] = list(walks(plan["Plan"]))
    walking = {sql: bad for sql, bad in found.items() if bad}
    assert walking == {}
    texts = " ".join(found)
    assert len(found) >= 40, texts
    for sql in ("(new_ref || '') IS NULL", "INSERT INTO walletctl.entry_outcome",
                "UPDATE walletctl.entry_outcome", "FROM new_events n LEFT JOIN walletctl.events p",
                "JOIN entry_outcome s ON s.entry = b.entry", "WHERE seq > "):
        assert sql in texts  # the append path, its triggers and the look-ups were seen


def blocking(node: dict[str, Any]) -> Iterator[str]:
    """The plan's nodes that read a growing table whole before they give their first row:
    a sort, a hash table built of it, an aggregate."""
    kind = node["Node Type"]
    tables = {str(n["Relation Name"]) for n in _all(node)
              if n.get("Relation Name") in GROWING}
    if kind in ("Sort", "Hash", "Aggregate", "Materialize") and tables:
        yield f"{kind} over {', '.join(sorted(tables))}"
    for child in node.get("Plans", ()):
        yield from blocking(child)


def _all(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _all(child)


def test_a_whole_listing_gives_its_first_entry_without_reading_them_all(
        explained: tuple[PostgresHistory, list[str]]) -> None:
    """``walletctl history`` over a year of entries prints its first line at once: the
    listing is read through a cursor, which PostgreSQL plans for its first rows, where the
    same query sent plainly is planned for its last (at a million entries: parallel hash
    joins and a sort of every entry, 3 s before the first line)."""
    store, plans = explained
    store.db().execute("SET enable_seqscan = on")  # the planner's own choice, this time
    plans.clear()
    listed = list(store.entries())
    assert listed[0].original_ref == "OLD-0"
    [plan] = [json.loads(t[t.index("{"):]) for t in plans if "ORDER BY b.entry" in t]
    assert list(blocking(plan["Plan"])) == [], plan
    # nor compiled first: at a million entries the plan's cost passes jit_above_cost, and
    # JIT took 150-400 ms before the first row of a plan that streams
    assert store.db().execute("SHOW jit").fetchone() == ("off",)
