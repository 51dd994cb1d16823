"""`history verify --anchor FILE`: only the events after the newest kept anchor are walked
(`--since-anchor` is its older spelling). An edit after the anchor is caught; an edit before
it that leaves the anchored event's hash as kept is not (`--full` catches it:
docs/history.md says so); a chain recomputed up to the head is caught by the anchor's own
hash. Run in process (tests/cli_runner.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from history_helpers import history_cli, rechain, record_refunds


def _anchored(tmp_path: Path) -> tuple[Path, Path]:
    """A history of 10 entries (20 events) anchored at event 12, then 4 more entries."""
    history = tmp_path / "h.sqlite3"
    record_refunds(history, 1, 6)
    anchors = tmp_path / "anchors.jsonl"
    made = history_cli(history, "history", "anchor", columns=100)
    assert made.returncode == 0, made.stderr
    anchors.write_text(made.stdout)
    record_refunds(history, 7, 10)
    return history, anchors


def _verify(history: Path, *args: str) -> tuple[int, dict[str, object], str]:
    proc = history_cli(history, "history", "verify", "-o", "json", *args, columns=100)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_walks_only_what_was_added_after_the_anchor(tmp_path: Path) -> None:
    history, anchors = _anchored(tmp_path)
    code, found, _ = _verify(history, "--anchor", str(anchors))
    assert code == 0
    assert (found["intact"], found["events"], found["sinceEvent"], found["anchors"]) == (
        True, 8, 12, 1)
    text = history_cli(history, "history", "verify", "-o", "table", "--anchor", str(anchors),
                       columns=100)
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
    rechain(history, drop_tree=False)
    code, found, err = _verify(history, "--anchor", str(anchors))
    assert (code, found["intact"], found["brokenAt"]) == (3, False, 13)
    assert [f["event"] for f in found["anchorFailures"]] == [12]  # type: ignore[attr-defined]
    assert "event 13" in err


def test_a_malformed_anchors_file_names_the_option(tmp_path: Path) -> None:
    history, _ = _anchored(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": 0}\n')
    proc = history_cli(history, "history", "verify", "--anchor", str(bad), columns=100)
    assert proc.returncode == 2
    assert f"--anchor {bad} line 1: field 'event' must be a number of 1 or more" in (
        proc.stderr)
