"""The team's desk on a real PostgreSQL server: one shared history, kept by the database.

Every command is ``python -m walletctl`` run as alice, bob or the owner, each with a HOME,
profiles file, runtime directory (this machine's money locks) and ~/.pgpass of their own;
the money is read back from the sandbox's own records, the history from the database.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from money.conftest import unique
from race_trials import TRIALS
from walletctl.history.postgres import LATEST

from .conftest import Team, make_team

HELD = 11


def _refund(team: Team, ref: str) -> list[dict[str, object]]:
    return [r for r in team.desk.followups(ref, "refund") if r.get("state") == "Approved"]


def test_setup_is_idempotent_and_grants_reading_and_appending_only(team: Team) -> None:
    again = team.owner.run("-o", "table", "history", "setup", "--grant", "alice", expect=0)
    assert f"schema version {LATEST} (already current)" in again.stdout, again
    with team.cluster.connect("desk_owner", team.db) as db:
        rights = {priv: db.execute(
            "SELECT has_table_privilege('alice', 'walletctl.events', %s)", (priv,)
        ).fetchone() for priv in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")}
    assert {k: v[0] for k, v in rights.items() if v} == {
        "SELECT": True, "INSERT": True, "UPDATE": False, "DELETE": False, "TRUNCATE": False}
    # an operator cannot set it up, and a role that does not exist is named
    denied = team.alice.run("history", "setup", expect=3)
    assert "owner" in denied.stderr, denied
    nobody = team.owner.run("history", "setup", "--grant", "dave", expect=3)
    assert "--grant dave: no such role" in nobody.stderr, nobody
    assert len(nobody.stderr.strip().splitlines()) <= 2, nobody


def test_the_database_refuses_to_change_or_fake_the_trail(team: Team) -> None:
    ref = team.desk.sale(unique("ORD"))
    team.alice.run("refund", ref, "--amount", "5.00", "--yes", "-p", "desk-a", expect=0)
    for role in ("alice", "bob", "desk_owner"):
        with team.cluster.connect(role, team.db) as db:
            for sql in ("UPDATE walletctl.events SET amount = '9999.00'",
                        "DELETE FROM walletctl.events", "TRUNCATE walletctl.events"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    db.execute(sql)
    with team.cluster.connect("bob", team.db) as db:
        tip = db.execute("SELECT seq, hash, entry FROM walletctl.events ORDER BY seq DESC "
                         "LIMIT 1").fetchone()
        assert tip is not None
        row = {"seq": tip[0] + 1, "kind": "complete", "entry": tip[2],
               "time": "2026-01-01T00:00:00.000Z", "prev_hash": tip[1], "hash": "a" * 64}
        # bob may append, but only as bob: an event claiming alice's name is refused
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="authenticated"):
            db.execute("INSERT INTO walletctl.events (seq, kind, entry, time, prev_hash, hash, "
                       "operator) VALUES (%(seq)s, %(kind)s, %(entry)s, %(time)s, "
                       "%(prev_hash)s, %(hash)s, 'alice')", row)
        # and only at the chain's tip: a gap (an event numbered past the next) ...
        with pytest.raises(psycopg.errors.SerializationFailure, match="does not extend"):
            db.execute("INSERT INTO walletctl.events (seq, kind, entry, time, prev_hash, hash) "
                       "VALUES (%(seq)s, %(kind)s, %(entry)s, %(time)s, %(prev_hash)s, "
                       "%(hash)s)", {**row, "seq": tip[0] + 2})
        # ... or a fork (a second successor to an older event) is refused
        with pytest.raises(psycopg.errors.UniqueViolation):
            db.execute("INSERT INTO walletctl.events (seq, kind, entry, time, prev_hash, hash) "
                       "VALUES (%(seq)s, %(kind)s, %(entry)s, %(time)s, %(prev)s, %(hash)s)",
                       {**row, "prev": "0" * 64})
    verified = team.bob.run("history", "verify", expect=0).json()
    assert verified["intact"] is True
    assert verified["events"] == 2


def test_one_history_seen_by_two_operators_each_named_by_the_database(team: Team) -> None:
    first, second = team.desk.sale(unique("ORD")), team.desk.sale(unique("ORD"))
    team.alice.run("refund", first, "--amount", "5.00", "--yes", "-p", "desk-a",
                   "--reason", "damaged", expect=0)
    team.bob.run("refund", second, "--amount", "7.00", "--yes", "-p", "desk-b", expect=0)
    for viewer in (team.alice, team.bob):
        entries = viewer.run("-o", "json", "history", expect=0).json()
        assert [(e["originalRef"] if "originalRef" in e else e["original_ref"], e["operator"],
                 e["outcome"]) for e in entries] == [
            (first, "alice", "approved"), (second, "bob", "approved")]
    # the operator is the role PostgreSQL authenticated, whatever the OS account says
    with team.cluster.connect("desk_owner", team.db) as db:
        names = db.execute("SELECT DISTINCT operator FROM walletctl.events ORDER BY 1").fetchall()
    assert names == [("alice",), ("bob",)]
    table = team.bob.run("-o", "table", "history", expect=0)
    assert "Operator" in table.stdout, table
    assert "alice" in table.stdout, table
    assert "bob" in table.stdout, table
    only_bob = team.alice.run("-o", "json", "history", "--user", "bob", expect=0).json()
    assert [e["operator"] for e in only_bob] == ["bob"]
    assert team.alice.run("history", "verify", expect=0).json()["events"] == 4
    assert team.bob.run("history", "--path", expect=0).stdout.strip() == team.url("bob")


@pytest.mark.slow
def test_two_operators_refunding_one_order_at_once_move_money_once(team: Team) -> None:
    """TRIALS trials (tests/race_trials.py): alice and bob refund the same order at the same
    moment, each from their own machine. The database's lock and the shared history let one
    through; the other is held (exit 11) and told who."""
    for trial in range(TRIALS):
        ref = team.desk.sale(unique(f"T{trial}"))
        argv = ("refund", ref, "--amount", "10.00", "--yes", "-p", "desk-a")
        procs = {op.role: op.popen(*argv) for op in (team.alice, team.bob)}
        results = {role: team.desk.finish(proc, argv) for role, proc in procs.items()}
        codes = sorted(r.code for r in results.values())
        assert codes == [0, HELD], {k: str(v) for k, v in results.items()}
        winner = next(role for role, r in results.items() if r.code == 0)
        loser = results["bob" if winner == "alice" else "alice"]
        assert winner in loser.stderr, loser
        assert "Traceback" not in loser.stderr
        assert len(_refund(team, ref)) == 1, f"trial {trial}: money moved twice"
    entries = team.alice.run("-o", "json", "history", "--op", "refund", expect=0).json()
    assert Counter(e["outcome"] for e in entries)["approved"] == TRIALS


DRIVER = textwrap.dedent('''
    import sys
    from walletctl.cli.common import make_client
    from walletctl.cli.state import State
    from walletctl.history import open_for
    from walletctl.ops.money.movements import follow_up
    from walletctl.ops.money.pipeline import Ask, Desk

    refs = sys.argv[1].split(",")
    count, offset = int(sys.argv[2]), int(sys.argv[3])
    state = State(profile_name="desk-a")
    done = 0
    for i in range(count):
        ref = refs[(i + offset) % len(refs)]
        with make_client(state) as client:
            store = open_for(client.profile, purpose=f"walletctl refund {ref}")
            moved = follow_up(client, store, Ask(op="refund", ref=ref, amount="1.00",
                                                 allow_duplicate=True),
                              Desk(confirm=lambda plan: None))
            assert moved.answer is not None and moved.answer.state == "Approved"
            done += 1
    print(done)
''')


@pytest.mark.slow
def test_four_processes_two_roles_200_refunds_one_chain(team: Team, tmp_path: Path) -> None:
    refs = [team.desk.sale(unique("BULK"), "500.00") for _ in range(20)]
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    people = (team.alice, team.bob, team.alice, team.bob)
    procs = [subprocess.Popen([sys.executable, str(script), ",".join(refs), "50", str(n * 7)],
                              env={**team.desk.env, **op.env}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for n, op in enumerate(people)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert out.strip() == "50"
    entries = team.owner.run("-o", "json", "history", "--op", "refund", expect=0).json()
    assert len(entries) == 200
    assert Counter(e["outcome"] for e in entries) == {"approved": 200}
    assert Counter(e["operator"] for e in entries) == {"alice": 100, "bob": 100}
    at_gateway = {r["clientSystemTransactionId"] for ref in refs for r in _refund(team, ref)}
    assert len(at_gateway) == 200
    assert {e["new_ref"] for e in entries} == at_gateway
    verified = team.bob.run("history", "verify", expect=0).json()
    assert (verified["intact"], verified["events"]) == (True, 400)


def test_unreachable_database_refuses_before_anything_is_sent(team: Team) -> None:
    ref = team.desk.sale(unique("ORD"))
    posts_before = len(team.desk.proxy.posts())
    closed = f"postgresql://alice@127.0.0.1:{_closed_port()}/desk"
    env = {"WALLETCTL_HISTORY_URL": closed}
    refused = team.alice.run("refund", ref, "--amount", "5.00", "--yes", "-p", "desk-a",
                             env=env, expect=3)
    first = refused.stderr.strip().splitlines()[0]
    assert closed in first, refused
    assert "nothing was sent" in first, refused
    assert "hint" in refused.stderr.lower(), refused
    assert _refund(team, ref) == []
    assert len(team.desk.proxy.posts()) == posts_before
    # the history is never silently empty either
    listing = team.alice.run("history", env=env, expect=3)
    assert closed in listing.stderr, listing


def test_a_password_in_the_url_is_refused_and_never_repeated(team: Team) -> None:
    secret = "s3cret-Pa55"
    url = team.url("alice").replace("alice@", f"alice:{secret}@")
    refused = team.alice.run("history", env={"WALLETCTL_HISTORY_URL": url}, expect=3)
    assert "must not contain a password" in refused.stderr, refused
    assert secret not in refused.stdout + refused.stderr


def test_server_stopped_mid_refund_leaves_an_unknown_entry_reconciled(
        desk: object, pg_private: object, tmp_path: Path) -> None:
    from money.conftest import Desk
    from pg_fixtures import PgCluster

    assert isinstance(desk, Desk)
    assert isinstance(pg_private, PgCluster)
    team = make_team(desk, pg_private, "desk", tmp_path / "team")
    ref = desk.sale(unique("ORD"))
    desk.proxy.latency(3.0, after_forward=True)  # applied, its answer 3 s on the way
    proc = team.alice.popen("refund", ref, "--amount", "5.00", "--yes", "-p", "desk-a")
    deadline = time.monotonic() + 20
    while not desk.proxy.posts() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert desk.proxy.posts(), "the refund never left"
    pg_private.stop("fast")  # the database goes away while the request is in flight
    done = desk.finish(proc, ("refund", ref))
    assert "Traceback" not in done.stderr, done
    assert len(_refund(team, ref)) == 1  # it was sent once...
    pg_private.start()
    unknown = team.alice.run("-o", "json", "history", "--unknown", expect=0).json()
    assert [e["original_ref"] for e in unknown] == [ref], done  # ...and its entry kept
    desk.proxy.clear()
    team.alice.run("history", "--unknown", "--reconcile", "-p", "desk-a", expect=0)
    entries = team.alice.run("-o", "json", "history", expect=0).json()
    assert [e["outcome"] for e in entries] == ["approved"]
    assert len(_refund(team, ref)) == 1
    assert team.bob.run("history", "verify", expect=0).json()["intact"] is True


def test_a_batch_records_to_the_shared_history_in_group_commits(team: Team,
                                                                tmp_path: Path) -> None:
    refs = [team.desk.sale(unique("B")) for _ in range(20)]
    rows = tmp_path / "rows.csv"
    rows.write_text("ref,amount\n" + "".join(f"{r},3.00\n" for r in refs))
    team.bob.run("refund", "--batch", str(rows), "--yes", "-p", "desk-a", expect=0,
                 timeout=120)
    entries = team.alice.run("-o", "json", "history", expect=0).json()
    assert len(entries) == 20
    assert {(e["operator"], e["outcome"]) for e in entries} == {("bob", "approved")}
    assert all(len(_refund(team, r)) == 1 for r in refs)
    assert team.alice.run("history", "verify", expect=0).json()["events"] == 40


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_outcome_appended_by_another_operator_is_named_and_a_false_hash_is_found(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database lets any operator append a later outcome to any entry (a reconcile
    does): history names who did; an event appended with a false hash breaks verify for
    everyone, naming the role that wrote it."""
    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory
    from walletctl.history.store import Completion

    ref = team.desk.sale(unique("ORD"))
    team.bob.run("refund", ref, "--amount", "2.00", "--yes", "-p", "desk-a", expect=0)
    monkeypatch.setenv("PGPASSFILE", team.alice.env["PGPASSFILE"])
    with PostgresHistory(parse_db_url(team.url("alice"))) as alice:
        alice.complete(1, Completion(time="2026-11-24T03:30:00.000Z", outcome="declined"))
    [entry] = team.bob.run("-o", "json", "history", expect=0).json()
    assert (entry["operator"], entry["completed_by"], entry["outcome"]) == (
        "bob", "alice", "declined")
    table = team.bob.run("-o", "table", "history", env={"COLUMNS": "80"}, expect=0)
    words = table.stdout.split()
    assert {"bob", "(outcome:", "alice)"} <= set(words), table  # wrapped at 80 columns
    assert team.bob.run("history", "verify", expect=0).json()["intact"] is True
    with team.cluster.connect("alice", team.db) as db:
        tip = db.execute("SELECT seq, hash FROM walletctl.events ORDER BY seq DESC "
                         "LIMIT 1").fetchone()
        assert tip is not None
        db.execute("INSERT INTO walletctl.events (seq, kind, entry, time, outcome, prev_hash, "
                   "hash) VALUES (%s, 'complete', 1, '2026-11-24T03:31:00.000Z', 'declined', "
                   "%s, %s)",
                   (tip[0] + 1, tip[1], "f" * 64))
    broken = team.bob.run("history", "verify", expect=3)
    assert "(written by alice)" in broken.stderr, broken
