"""`history verify --anchor FILE`: only the events after the newest kept anchor are walked
(`--since-anchor` is its older spelling). An edit after the anchor is caught; an edit before
it that leaves the anchored event's hash as kept is not (`--full` catches it:
docs/history.md says so); a chain recomputed up to the head is caught by the anchor's own
hash. Run in process (tests/cli_runner.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from history_helpers import SRC

from cli_runner import run_walletctl
from walletctl.history.chain import ALL, GENESIS, event_hash
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, Intent


def _fill(path: Path, first: int, last: int) -> None:
    with SqliteHistory(path) as store:
        for i in range(first, last + 1):
            entry = store.begin(Intent(
                time=f"2026-11-{i:02d}T10:00:00.000Z", os_user="ana", host="desk-1",
                profile="desk", base_url="https://gw.example", operation="refund",
                original_ref=f"ORD-{i}", new_ref=f"ORD-{i}-REF1", amount=f"{i}.50",
                currency="EUR", merchant_id="M-1", store_id="S-1"))
            store.complete(entry, Completion(time=f"2026-11-{i:02d}T10:00:01.000Z",
                                             outcome="approved", http_status=200))


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(WALLETCTL_AUDIT_LOG=str(path), COLUMNS="100", NO_COLOR="1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = run_walletctl(args, env=env)  # in-process (tests/cli_runner.py)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _anchored(tmp_path: Path) -> tuple[Path, Path]:
    """A history of 10 entries (20 events) anchored at event 12, then 4 more entries."""
    history = tmp_path / "h.sqlite3"
    _fill(history, 1, 6)
    anchors = tmp_path / "anchors.jsonl"
    made = _cli(history, "history", "anchor")
    assert made.returncode == 0, made.stderr
    anchors.write_text(made.stdout)
    _fill(history, 7, 10)
    return history, anchors


def _verify(history: Path, *args: str) -> tuple[int, dict[str, object], str]:
    proc = _cli(history, "history", "verify", "-o", "json", *args)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_walks_only_what_was_added_after_the_anchor(tmp_path: Path) -> None:
    history, anchors = _anchored(tmp_path)
    code, found, _ = _verify(history, "--anchor", str(anchors))
    assert code == 0
    assert (found["intact"], found["events"], found["sinceEvent"], found["anchors"]) == (
        True, 8, 12, 1)
    text = _cli(history, "history", "verify", "-o", "table", "--anchor", str(anchors))
    assert "intact, 8 events after anchored event 12" in text.stdout
    code, found, _ = _verify(history)
    assert (code, found["events"], found["sinceEvent"]) == (0, 20, None)
    code, found, _ = _verify(history, "--since-anchor", str(anchors))  # the older spelling
    assert (code, found["events"], found["sinceEvent"]) == (0, 8, 12)
    code, found, _ = _verify(history, "--anchor", str(anchors), "--full")
    assert (code, found["events"], found["sinceEvent"], found["anchors"]) == (0, 20, None, 1)


def test_an_edit_after_the_anchor_is_caught(tmp_path: Path) -> None:
    history, anchors = _anchored(tmp_path)
    with sqlite3.connect(history) as db:
        db.execute("UPDATE events SET amount = '9999.00' WHERE seq = 15")  # entry #8's begin
    code, found, err = _verify(history, "--anchor", str(anchors))
    assert (code, found["intact"], found["brokenAt"]) == (3, False, 15)
    assert "entry #8 was changed after it was written" in err
    assert "(2 events before it after anchored event 12 are intact)" in err


def test_an_edit_before_the_anchor_needs_the_full_walk(tmp_path: Path) -> None:
    """Not the anchored event's hash: the incremental walk does not read it. The full walk
    does (and the anchor's hash still matches: the chain was not recomputed)."""
    history, anchors = _anchored(tmp_path)
    with sqlite3.connect(history) as db:
        db.execute("UPDATE events SET amount = '9999.00' WHERE seq = 3")  # entry #2's begin
    code, found, _ = _verify(history, "--anchor", str(anchors))
    assert (code, found["intact"]) == (0, True)
    code, found, err = _verify(history, "--anchor", str(anchors), "--full")
    assert (code, found["brokenAt"]) == (3, 3)
    assert "entry #2 was changed after it was written" in err


def test_a_chain_recomputed_before_the_anchor_is_caught_by_its_hash(tmp_path: Path) -> None:
    """Rewriting an old entry and recomputing every hash after it changes the anchored
    event's hash: the anchor fails, and the walk after it breaks at its first event."""
    history, anchors = _anchored(tmp_path)
    with sqlite3.connect(history) as db:
        db.execute("UPDATE events SET amount = '9999.00' WHERE seq = 3")
        rows = db.execute(f"SELECT seq, {', '.join(ALL)} FROM events ORDER BY seq").fetchall()  # noqa: S608
        prev = GENESIS
        for seq, *values in rows:
            digest = event_hash(prev, seq, values)
            db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?",
                       (prev, digest, seq))
            prev = digest
    code, found, err = _verify(history, "--anchor", str(anchors))
    assert (code, found["intact"], found["brokenAt"]) == (3, False, 13)
    assert [f["event"] for f in found["anchorFailures"]] == [12]  # type: ignore[attr-defined]
    assert "event 13" in err


def test_a_malformed_anchors_file_names_the_option(tmp_path: Path) -> None:
    history, _ = _anchored(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": 0}\n')
    proc = _cli(history, "history", "verify", "--anchor", str(bad))
    assert proc.returncode == 2
    assert f"--anchor {bad} line 1: field 'event' must be a number of 1 or more" in (
        proc.stderr)
