"""An order's evidence bundle from outside: written by ``walletctl order REF --evidence``
on a real sandbox and history (an approval decided by a second operator, a finding filed
and resolved), checked by ``walletctl history check-evidence`` with no profile, history or
gateway. Every edit the issue lists either fails (exit 3, one line) or leaves the reading
unchanged; so does an edit of every leaf of the file in turn (the mutation test)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.test_secrets import leaks
from walletctl.errors import WalletctlError
from walletctl.ops.bundle_reader import check_bundle
from walletctl.ops.evidence import EvidenceError

from .conftest import Desk
from .test_order import MISMATCH, an_order

BROKEN = 3
Lines = list[dict[str, Any]]


def _offline(tmp: Path) -> dict[str, str]:
    """An environment with no profile, no history and no gateway: only the bundle."""
    return {"WALLETCTL_CONFIG": str(tmp / "none.toml"), "WALLETCTL_AUDIT_LOG": str(
        tmp / "no-history.sqlite3"), "WALLETCTL_HISTORY_URL": "", "HTTP_PROXY": "",
        "WALLETCTL_MONEY_KEY": ""}


def _write(path: Path, lines: Lines) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def _event(lines: Lines, **match: Any) -> dict[str, Any]:
    return next(line["event"] for line in lines if "event" in line and all(
        line["event"][k] == v for k, v in match.items()))


def _reading(path: Path, anchors: Path | None = None) -> dict[str, Any] | None:
    """The reading, or None when the check fails as it must (exit 3, EvidenceError)."""
    try:
        return check_bundle(path, anchors).reading()
    except EvidenceError as exc:
        failed = exc
    assert failed.exit_code == BROKEN
    assert "\n" not in failed.message
    return None


def _edits() -> dict[str, Callable[[Lines], None]]:
    def relabel(lines: Lines) -> None:
        _event(lines, operation="approval")["outcome"] = "refused"

    def requester(lines: Lines) -> None:  # the request: the movement refused until approved
        _event(lines, operation="refund", outcome="refused")["os_user"] = "\u0430lice"

    def decision_note(lines: Lines) -> None:
        _event(lines, operation="approval")["reason"] = "looked fine"

    def decision_time(lines: Lines) -> None:
        _event(lines, operation="approval")["time"] = "2020-01-01T00:00:00.000Z"

    def finding_note(lines: Lines) -> None:
        e = _event(lines, operation="finding")
        assert "7.5" in e["note"], e["note"]
        e["note"] = e["note"].replace("7.5", "0.75")

    def finding_recorder(lines: Lines) -> None:
        _event(lines, operation="finding")["os_user"] = "someone-else"

    def spent_amount(lines: Lines) -> None:
        _event(lines, operation="refund", amount="150.00", kind="begin")["amount"] = "1.50"

    def snan(lines: Lines) -> None:
        _event(lines, operation="refund", amount="20.00", kind="begin")["amount"] = "sNaN"

    def huge(lines: Lines) -> None:
        _event(lines, operation="refund", amount="20.00", kind="begin")["amount"] = 1e300

    def proof(lines: Lines) -> None:
        lines[1]["proof"][0] = "0" * 64

    def checkpoint_root(lines: Lines) -> None:
        lines[0]["checkpoint"]["root"] = "1" * 64

    def drop_begin(lines: Lines) -> None:
        del lines[1]

    return {"approval relabelled refused": relabel, "requester": requester,
            "decision note": decision_note, "decision time": decision_time,
            "finding note": finding_note, "finding recorder": finding_recorder,
            "spent amount": spent_amount, "sNaN": snan, "huge": huge, "proof": proof,
            "checkpoint root": checkpoint_root, "dropped begin": drop_begin}


def _harmless() -> dict[str, Callable[[Lines], None]]:
    def fake_record(lines: Lines) -> None:
        record = next(line for line in lines if "gateway" in line)
        fake = copy.deepcopy(record)
        fake["gateway"]["state"] = "Declined"
        fake["gateway"]["transactionAmount"] = "2.00"
        lines.append(fake)

    def verified(lines: Lines) -> None:
        lines[0]["checkpoint"]["source"] = "(verified)"

    def made_by(lines: Lines) -> None:
        lines[0]["made"]["by"] = "the auditor"

    return {"a fake Declined gateway record": fake_record, "(verified) typed in": verified,
            "who made it": made_by}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _leaves(item, (*path, n))
    else:
        yield path


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value[:-1] + ("0" if value[-1:] != "0" else "1") if value else "x"
    return "x"  # None


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@pytest.fixture
def case(desk: Desk, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """The order, its finding filed by recon and resolved, a signed-off anchor, the bundle."""
    ref, _number = an_order(desk, monkeypatch)
    found = desk.run("-p", "desk-a", "-o", "json", "recon", "--ref", ref, "--record",
                     expect=MISMATCH).json()
    finding = found["unrecorded"][0]["finding"]["id"]
    # a finding about money moved off the desk is resolved by someone other than its
    # recorder (four eyes): bob, another OS account on this machine
    from walletctl.history import recorder
    from walletctl.ops import desk as desk_ops

    with monkeypatch.context() as patch:
        patch.setattr(recorder, "os_user", lambda: "bob")
        patch.setattr(desk_ops, "os_user", lambda: "bob")
        desk.run("-p", "desk-a", "recon", "resolve", str(finding), "--note",
                 "refunded by the shop, ticket 9", expect=0)
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text(desk.run("history", "anchor", expect=0).stdout)
    bundle = tmp_path / "case.ndjson"
    got = desk.run("-p", "desk-a", "order", ref, "--evidence", str(bundle), "--anchor",
                   str(anchors), expect=0)
    # the check the note hands on is the one that says who vouches for the checkpoint
    hint = " ".join(got.stderr.split())
    assert f"check-evidence {bundle} --anchor {anchors}`" in hint, got
    assert f"the checkpoint on line 1 of {anchors})" in hint, got
    plain = desk.run("-p", "desk-a", "order", ref, "--evidence", str(tmp_path / "plain.ndjson"),
                     expect=0)
    hint = " ".join(plain.stderr.split())
    assert "not anchored" in hint, plain
    assert "--anchor" not in hint, plain
    assert f"check-evidence {tmp_path / 'plain.ndjson'}`" in hint, plain
    text = bundle.read_text()
    assert not leaks(text, desk.api_key), "the bundle shows the API key"
    for secret in ("service_secret", "serviceSecret", "4111111111111111", "cryptogram"):
        assert secret not in text, secret
    return bundle, anchors


def test_the_reading_is_told_from_the_proven_events(case: tuple[Path, Path], desk: Desk,
                                                    tmp_path: Path) -> None:
    bundle, anchors = case
    offline = _offline(tmp_path)
    plain = desk.run("-o", "table", "history", "check-evidence", str(bundle), env=offline,
                     expect=0)
    assert "not anchored" in plain.stdout, plain
    # nothing the bundle says of its own checkpoint is printed as if it had been checked
    source = json.loads(bundle.read_text().splitlines()[0])["checkpoint"]["source"]
    assert str(anchors) in source, source
    for said in (source, str(anchors), "line 1 of"):
        assert said not in " ".join(plain.stdout.split()), (said, plain)
    assert not [line for line in plain.stdout.splitlines()
                if line.strip().startswith("anchored")], plain
    alone = desk.run("-o", "json", "history", "check-evidence", str(bundle), env=offline,
                     expect=0).json()
    assert alone["reading"]["anchored"].startswith("not anchored: nothing outside"), alone
    assert str(anchors) not in json.dumps(alone), alone
    assert "not covered by the proofs" in plain.stdout, plain
    anchored = desk.run("-o", "json", "history", "check-evidence", str(bundle), "--anchor",
                        str(anchors), env=offline, expect=0).json()
    reading = anchored["reading"]
    assert reading["anchored"].startswith("line 1 of")
    assert reading["balance"] == {"currency": "EUR", "checkedOut": "400.00",
                                  "captured": "300.00", "refunded": "170.00",
                                  "reversed": False}
    [approval] = reading["approvals"]
    assert (approval["decision"], approval["decidedBy"].split("@")[0]) == (
        "approved", "second-operator")
    assert [s["outcome"] for s in approval["spentBy"]] == ["approved"]
    [finding] = reading["findings"]
    assert [r["resolution"] for r in finding["resolutions"]] == [
        "refunded by the shop, ticket 9"]
    assert anchored["notCovered"], anchored  # the gateway's records, set apart
    for name, edit in _edits().items():
        lines = [json.loads(line) for line in bundle.read_text().splitlines()]
        edit(lines)
        path = _write(tmp_path / "edited.ndjson", lines)
        assert _reading(path) is None, name
    for name, edit in _harmless().items():
        lines = [json.loads(line) for line in bundle.read_text().splitlines()]
        edit(lines)
        path = _write(tmp_path / "harmless.ndjson", lines)
        assert _reading(path) == check_bundle(bundle).reading(), name
    # through the command: exit 3 and one line, never an internal error
    lines = [json.loads(line) for line in bundle.read_text().splitlines()]
    _edits()["sNaN"](lines)
    failed = desk.run("history", "check-evidence", str(_write(tmp_path / "snan.ndjson", lines)),
                      env=offline, expect=BROKEN)
    assert len(failed.stderr.strip().splitlines()) <= 2, failed
    for junk in ('{"amount": 1e999999999}', '{"format": NaN}', "[" * 5000, "\xff\xfe",
                 '{"a": 1, "a": 2}', "9" * 5000):
        (tmp_path / "junk.ndjson").write_text(junk)
        desk.run("history", "check-evidence", str(tmp_path / "junk.ndjson"), env=offline,
                 expect=BROKEN)
    desk.run("history", "check-evidence", str(tmp_path / "absent.ndjson"), env=offline,
             expect=2)


def test_every_leaf_edited_in_turn_fails_or_changes_nothing(case: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    bundle, anchors = case
    original = [json.loads(line) for line in bundle.read_text().splitlines()]
    for with_anchor in (None, anchors):
        before = check_bundle(bundle, with_anchor).reading()
        edits = 0
        for n, line in enumerate(original):
            for path in _leaves(line):
                lines = copy.deepcopy(original)
                _set(lines[n], path, _mutated(_get(lines[n], path)))
                edited = _write(tmp_path / "mutant.ndjson", lines)
                try:
                    after = _reading(edited, with_anchor)
                except WalletctlError as exc:  # anything but exit 3 is a failure
                    raise AssertionError(f"line {n + 1} {path}: {exc!r}") from None
                assert after is None or after == before, (n + 1, path)
                edits += 1
        assert edits > 300
