"""Every history command reads the same on SQLite and PostgreSQL: the same entries, written
through the one storage interface, listed with the same filters and formats, verified, cut
and found cut by ``--expect-head``. Only where the history lives, and who the operator is,
differ."""

from __future__ import annotations

import csv
import io
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_walletctl
from pg_fixtures import PgDesk
from walletctl.config.dburl import parse_db_url
from walletctl.history.postgres import PostgresHistory
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, HistoryStore, Intent

# Issue 21: references may hold spaces, '#' and any script (models.fields)
ODD_REFS = {2: "Bestellung ä #2", 6: "注文 6"}


def _ref(i: int) -> str:
    return ODD_REFS.get(i, f"ORD-{i}")


def _intent(i: int) -> Intent:
    return Intent(time=f"2026-11-{1 + i:02d}T10:00:00.000Z", os_user="ana", host="desk-1",
                  profile="prod" if i % 2 else "test", base_url="https://gw.example",
                  operation="capture" if i % 3 == 0 else "refund", original_ref=_ref(i),
                  new_ref=f"{_ref(i)[:60]}-R1", amount=f"{i}.50", currency="EUR",
                  reason="customer request" if i % 2 else None, merchant_id="M-1",
                  store_id="S-1")


def _fill(store: HistoryStore) -> None:
    for i in range(1, 9):
        entry = store.begin(_intent(i))
        if i != 5:  # entry 5 stays unknown
            store.complete(entry, Completion(time=f"2026-11-{1 + i:02d}T10:00:01.000Z",
                                             outcome="declined" if i == 4 else "approved",
                                             http_status=200, exit_code=0))


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    proc = run_walletctl(argv, env=env)  # in-process (tests/cli_runner.py)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


QUERIES: list[tuple[str, ...]] = [
    ("-o", "json", "history"),
    ("-o", "json", "history", "--op", "capture"),
    ("-o", "json", "history", "--profile", "prod", "--since", "2026-11-04"),
    ("-o", "json", "history", "--until", "2026-11-05T00:00"),
    ("-o", "json", "history", "--ref", "ORD-3-R1"),
    ("-o", "json", "history", "--ref", "Bestellung ä #2"),
    ("-o", "json", "history", "--outcome", "declined"),
    ("-o", "json", "history", "--unknown"),
    ("-o", "json", "history", "--last", "2"),
    ("-o", "ndjson", "history", "--last", "3"),
    ("-o", "csv", "history"),
]


def _comparable(fmt: str, text: str) -> Any:
    """The output without what differs by design: who the operator is."""
    import json

    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
    elif fmt == "ndjson":
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        rows = json.loads(text)
    for row in rows:
        row.pop("operator", None)
        row.pop("completed_by", None)
    return rows


@pytest.fixture
def both(pg_desk: PgDesk, tmp_path: Path) -> dict[str, dict[str, str]]:
    home = tmp_path / "alice"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(pg_desk.cluster.env_for("alice", home), COLUMNS="80", NO_COLOR="1")
    owner = {**env, **pg_desk.cluster.env_for("desk_owner", tmp_path / "owner"),
             "WALLETCTL_HISTORY_URL": pg_desk.url("desk_owner")}
    assert _cli(owner, "history", "setup", "--grant", "alice").returncode == 0
    os.environ["PGPASSFILE"] = env["PGPASSFILE"]  # this process writes as alice too
    try:
        with PostgresHistory(parse_db_url(pg_desk.url("alice"))) as shared:
            _fill(shared)
    finally:
        del os.environ["PGPASSFILE"]
    with SqliteHistory(tmp_path / "h.sqlite3") as local:
        _fill(local)
    return {"sqlite": {**env, "WALLETCTL_AUDIT_LOG": str(tmp_path / "h.sqlite3")},
            "postgresql": {**env, "WALLETCTL_HISTORY_URL": pg_desk.url("alice")}}


def test_every_listing_reads_the_same_on_both_backends(both: dict[str, dict[str, str]]) -> None:
    for argv in QUERIES:
        seen = {name: _cli(env, *argv) for name, env in both.items()}
        assert {name: p.returncode for name, p in seen.items()} == {
            "sqlite": 0, "postgresql": 0}, argv
        fmt = argv[1]
        local, shared = (_comparable(fmt, seen[n].stdout) for n in ("sqlite", "postgresql"))
        assert local == shared, argv
        assert local, argv
        if argv[2:] == ("history",):  # the references come back as written, on both backends
            text = seen["postgresql"].stdout
            assert all(ref in text for ref in ODD_REFS.values()), (argv, text[:800])
    table = {name: _cli(env, "-o", "table", "history").stdout for name, env in both.items()}
    assert "ana" in table["sqlite"]
    assert "alice" in table["postgresql"]


def test_verify_and_expect_head_on_both_backends(both: dict[str, dict[str, str]]) -> None:
    heads = {}
    for name, env in both.items():
        verified = _cli(env, "history", "verify")
        assert verified.returncode == 0, verified.stderr
        import json

        record = json.loads(verified.stdout)
        assert (record["backend"], record["intact"], record["events"]) == (name, True, 15)
        heads[name] = record["headHash"]
        again = _cli(env, "history", "verify", "--expect-head", record["headHash"][:16])
        assert again.returncode == 0, again.stderr
        gone = _cli(env, "history", "verify", "--expect-head", "0123456789abcdef")
        assert gone.returncode == 3
        assert "newer entries were deleted" in gone.stderr
    # different operators hash differently: the chain covers who wrote each event
    assert heads["sqlite"] != heads["postgresql"]
