"""Checkpoints on a local history (in-process CLI): `history anchor` prints the tree's size
and root and the history's identity, signed with --sign-key; `history verify --anchor FILE
[--trust-key PUB.pem]` checks each is a prefix of today's tree and of the next one, and
that the trusted key signed each."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tree_checks import intent
from walletctl.cli.main import app
from walletctl.history.chain import ALL, GENESIS, event_hash
from walletctl.history.sqlite import SqliteHistory


def _cli(path: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={
        "WALLETCTL_AUDIT_LOG": str(path), "WALLETCTL_HISTORY_URL": None, "COLUMNS": "100",
        "NO_COLOR": "1"})
    assert "Traceback" not in (result.stdout + result.stderr)
    return result


def _grow(path: Path, first: int, last: int) -> None:
    with SqliteHistory(path) as store:
        store.begin_many([intent(i) for i in range(first, last + 1)])


def _keys(tmp: Path, name: str) -> tuple[Path, Path]:
    key = Ed25519PrivateKey.generate()
    private, public = tmp / f"{name}.pem", tmp / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _anchor(path: Path, anchors: Path, *args: str) -> dict[str, Any]:
    result = _cli(path, "history", "anchor", *args)
    assert result.exit_code == 0, result.stderr
    with anchors.open("a") as out:
        out.write(result.stdout)
    found: dict[str, Any] = json.loads(result.stdout)
    return found


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "h.sqlite3"
    _grow(path, 0, 4)
    return path


def test_a_checkpoint_names_the_tree_and_the_history(history: Path, tmp_path: Path) -> None:
    line = _anchor(history, tmp_path / "a.jsonl")
    with SqliteHistory(history) as store:
        assert line["size"] == line["event"] == 5
        assert line["root"] == store.tree_root(5).hex()
        assert line["log"] == store.tree_root(1).hex()
    assert "signature" not in line
    _grow(history, 5, 9)
    assert _cli(history, "history", "verify", "--anchor", str(tmp_path / "a.jsonl")
                ).exit_code == 0


def test_signed_checkpoints_accepted_with_the_key_refused_with_another_or_none(
        history: Path, tmp_path: Path) -> None:
    key, pub = _keys(tmp_path, "desk")
    _, other = _keys(tmp_path, "other")
    anchors = tmp_path / "a.jsonl"
    line = _anchor(history, anchors, "--sign-key", str(key))
    assert len(line["key_id"]) == 16
    _grow(history, 5, 7)
    _anchor(history, anchors, "--sign-key", str(key))
    ok = _cli(history, "history", "verify", "--anchor", str(anchors), "--trust-key", str(pub))
    assert ok.exit_code == 0, ok.stderr
    wrong = _cli(history, "history", "verify", "--anchor", str(anchors), "--trust-key",
                 str(other))
    assert wrong.exit_code == 3
    assert "not the trusted key" in wrong.stderr
    _anchor(history, anchors)  # an unsigned line among them
    unsigned = _cli(history, "history", "verify", "--anchor", str(anchors), "--trust-key",
                    str(pub))
    assert unsigned.exit_code == 3
    assert "is not signed" in unsigned.stderr


def test_a_signature_over_other_values_is_refused(history: Path, tmp_path: Path) -> None:
    key, pub = _keys(tmp_path, "desk")
    anchors = tmp_path / "a.jsonl"
    line = _anchor(history, anchors, "--sign-key", str(key))
    line["time"] = "2020-01-01T00:00:00.000Z"  # the signed text changes
    anchors.write_text(json.dumps(line) + "\n")
    found = _cli(history, "history", "verify", "--anchor", str(anchors), "--trust-key",
                 str(pub))
    assert found.exit_code == 3
    assert "did not make" in found.stderr


def _rewrite(path: Path, seq: int) -> None:
    """The file's owner changes an event, recomputes the chain and rebuilds the tree: the
    history then verifies by itself."""
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET amount = '999.00' WHERE seq = ?", (seq,))
        rows = db.execute(f"SELECT seq, {', '.join(ALL)} FROM events ORDER BY seq").fetchall()  # noqa: S608
        prev = GENESIS
        for n, *values in rows:
            digest = event_hash(prev, n, values)
            db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?",
                       (prev, digest, n))
            prev = digest
        db.execute("DROP TABLE merkle_nodes")
    with SqliteHistory(path) as store:  # refilled from the rewritten events
        assert store.verify() == (len(rows), None)


def test_a_rewrite_between_two_anchors_is_caught(history: Path, tmp_path: Path) -> None:
    anchors = tmp_path / "a.jsonl"
    _anchor(history, anchors)  # 5 events
    _grow(history, 5, 9)
    _anchor(history, anchors)  # 10 events
    _rewrite(history, 7)
    assert _cli(history, "history", "verify").exit_code == 0  # by itself it holds
    found = _cli(history, "history", "verify", "--anchor", str(anchors))
    assert found.exit_code == 3
    assert "line 2" in found.stderr


def test_a_root_that_is_not_a_prefix_is_caught_by_consistency(history: Path,
                                                             tmp_path: Path) -> None:
    anchors = tmp_path / "a.jsonl"
    first = _anchor(history, anchors)
    _grow(history, 5, 9)
    second = _anchor(history, anchors)
    # the first line's root swapped for another tree's: the chain's hash still matches
    first["root"] = second["root"]
    anchors.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    found = _cli(history, "history", "verify", "--anchor", str(anchors), "-o", "json")
    assert found.exit_code == 3
    why = [f["why"] for f in json.loads(found.stdout)["anchorFailures"]]
    assert any("not a prefix" in w for w in why), why
    assert any("not an extension of line 1" in w for w in why), why


def test_a_key_that_is_not_ed25519_is_a_usage_error(history: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    found = _cli(history, "history", "anchor", "--sign-key", str(bad))
    assert found.exit_code == 2
    assert "--sign-key" in found.stderr
