"""The history file itself: hash chain (edited / deleted / swapped entries are named by
`history verify`), concurrent appenders, permissions, listing filters and formats."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from history_helpers import SRC, expect

from cli_runner import run_walletctl
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, Intent


def _intent(i: int, **kw: str) -> Intent:
    base = dict(time=f"2020-11-{1 + i % 20:02d}T10:00:00.000Z", os_user="ana", host="desk-1",
                profile="prod", base_url="https://gw.example", operation="refund",
                original_ref=f"ORD-{i}", new_ref=f"ORD-{i}-REF1", amount=f"{i}.50",
                currency="EUR", reason="customer request")
    base.update(kw)
    return Intent(**base)  # type: ignore[arg-type]


def _fill(path: Path, n: int = 6) -> None:
    with SqliteHistory(path) as store:
        for i in range(1, n + 1):
            entry = store.begin(_intent(i, operation="capture" if i % 3 == 0 else "refund",
                                        os_user="bo" if i % 2 else "ana"))
            store.complete(entry, Completion(time=f"2020-11-{1 + i % 20:02d}T10:00:01.000Z",
                                             outcome="approved" if i != 4 else "declined",
                                             http_status=200, exit_code=0))


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(WALLETCTL_AUDIT_LOG=str(path), COLUMNS="80", NO_COLOR="1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = run_walletctl(args, env=env)  # in-process (tests/cli_runner.py)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


TAMPERING = {
    "edited amount": ("UPDATE events SET amount = '9999.00' WHERE seq = 5",
                      "entry #3 was changed after it was written"),
    "deleted entry": ("DELETE FROM events WHERE seq = 7",
                      "event 7 is missing (deleted)"),
    "swapped pair": (
        "UPDATE events SET seq = CASE seq WHEN 3 THEN -1 WHEN 5 THEN 3 END WHERE seq IN (3, 5);"
        "UPDATE events SET seq = 5 WHERE seq = -1",
        "entry #3 does not follow the event before it"),
    "edited outcome": ("UPDATE events SET outcome = 'approved' WHERE seq = 8",
                       "the outcome of entry #4 was changed"),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_verify_names_the_first_broken_entry(tmp_path: Path, case: str) -> None:
    path = tmp_path / "h.sqlite3"
    _fill(path)
    with SqliteHistory(path) as store:
        assert store.verify() == (12, None)
    sql, message = TAMPERING[case]
    with sqlite3.connect(path) as db:
        db.executescript(sql)
    with SqliteHistory(path) as store:
        _count, broken = store.verify()
    assert broken is not None
    assert message in broken.problem, broken


def test_verify_command_exit_codes(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    _fill(path)
    ok = _cli(path, "-o", "table", "history", "verify")
    assert ok.returncode == 0, ok
    assert "intact, 12 events" in ok.stdout
    # piped without -o: one JSON document, as every command prints
    piped = _cli(path, "history", "verify")
    assert piped.returncode == 0, piped
    assert json.loads(piped.stdout) == {
        "history": str(path), "backend": "sqlite", "file": str(path), "intact": True,
        "events": 12, "brokenAt": None, "headEvent": 12,
        "headHash": json.loads(piped.stdout)["headHash"], "anchors": 0, "sinceEvent": None,
        "anchorFailures": [],
        "spentWithoutDecision": [], "problems": []}
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET amount = '1.00' WHERE seq = 5")
    bad = _cli(path, "history", "verify")
    assert bad.returncode == 3, bad
    assert bad.stderr.startswith("walletctl: error: history ")
    assert "entry #3" in bad.stderr
    assert json.loads(bad.stdout)["intact"] is False
    assert json.loads(bad.stdout)["brokenAt"] == 5
    assert json.loads(bad.stdout)["problems"] == [bad.stderr.splitlines()[0].removeprefix(
        "walletctl: error: ")]
    assert _cli(path, "-o", "table", "history", "verify").stdout == ""  # the error says it


_APPENDER = """
import sys
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent
store = SqliteHistory(__import__("pathlib").Path(sys.argv[1]))
for i in range(500):
    store.begin(Intent(time="2026-11-22T10:00:00.000Z", os_user=sys.argv[2], host="h",
                       profile="p", base_url="u", operation="refund", original_ref=str(i)))
"""


def test_two_processes_appending_500_each_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    SqliteHistory(path).close()
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), who], env=env)
             for who in ("ana", "bo")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with SqliteHistory(path) as store:
        entries = list(store.entries())
        assert store.verify() == (1000, None)
    assert sorted(e.id for e in entries) == list(range(1, 1001))
    for who in ("ana", "bo"):
        assert sorted(int(e.original_ref or "") for e in entries if e.os_user == who) == list(
            range(500))


def test_created_private_in_its_own_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "h.sqlite3"
    _fill(path, 1)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        assert not side.exists() or os.stat(side).st_mode & 0o777 == 0o600


def test_listing_filters_and_formats(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    _fill(path)

    def ids(*args: str) -> list[int]:
        proc = _cli(path, "-o", "json", "history", *args)
        assert proc.returncode == 0, proc.stderr
        return [e["id"] for e in json.loads(proc.stdout)]

    assert ids() == [1, 2, 3, 4, 5, 6]
    assert ids("--op", "capture") == [3, 6]
    assert ids("--user", "ana", "--outcome", "declined") == [4]
    assert ids("--ref", "ORD-2-REF1") == [2]
    assert ids("--ref", "ORD-5") == [5]
    assert ids("--since", "2020-11-04", "--until", "2020-11-06T00:00") == [3, 4]
    assert ids("--profile", "other") == []
    assert ids("--last", "2") == [5, 6]
    assert ids("--since", "1d") == []
    assert ids("--until", "1d") == [1, 2, 3, 4, 5, 6]
    ndjson = _cli(path, "-o", "ndjson", "history", "--op", "refund").stdout.splitlines()
    assert [json.loads(line)["operation"] for line in ndjson] == ["refund"] * 4
    rows = list(csv.DictReader(io.StringIO(_cli(path, "-o", "csv", "history").stdout)))
    assert rows[0]["amount"] == "1.50"
    assert rows[0]["reason"] == "customer request"
    table = _cli(path, "-o", "table", "history").stdout
    assert "ORD-1-REF1" in table
    assert "6 entries" in table
    one = _cli(path, "-o", "table", "history", "--last", "1").stdout
    assert "\n1 entry\n" in one, one
    assert max(len(line) for line in table.splitlines()) <= 80
    bad = _cli(path, "history", "--since", "yesterday")
    assert bad.returncode == 2
    assert "--since" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1
    assert _cli(path, "history", "--path").stdout.strip() == str(path)


def test_not_a_regular_file_is_refused_before_sending(tmp_path: Path) -> None:
    proc = _cli(tmp_path, "history", "verify")  # a directory
    expect(proc, 3, "is not a regular file")


def test_a_table_shows_a_screenful_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    _fill(path, 55)
    proc = _cli(path, "-o", "table", "history")
    assert proc.returncode == 0, proc.stderr
    assert "showing the last 50 entries (the newest is #55)" in proc.stderr  # no count
    assert " 6   2020" in proc.stdout
    assert " 5   2020" not in proc.stdout


def test_deleting_the_newest_entries_is_caught_by_a_kept_head(tmp_path: Path) -> None:
    """A cut-off tail leaves a chain intact in itself: the head hash that an earlier verify
    printed (kept outside the file) is what shows the cut."""
    path = tmp_path / "h.sqlite3"
    _fill(path)
    ok = _cli(path, "-o", "json", "history", "verify")
    assert ok.returncode == 0, ok
    head = json.loads(ok.stdout)["headHash"][:16]
    again = _cli(path, "-o", "table", "history", "verify", "--expect-head", head)
    assert again.returncode == 0, again
    assert f"head: event 12, hash {head}" in again.stdout
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM events WHERE seq > 8")
    plain = _cli(path, "history", "verify")
    assert plain.returncode == 0, plain  # the file alone cannot tell
    cut = _cli(path, "history", "verify", "--expect-head", head)
    assert cut.returncode == 3, cut
    assert "newer entries were deleted (the chain now ends at event 8)" in cut.stderr
    bad = _cli(path, "history", "verify", "--expect-head", "xyz")
    assert bad.returncode == 2, bad
