"""``walletctl history check-evidence FILE``: an order's bundle read offline, with nothing
but the file (no database, gateway or profile), a line at a time (memory bounded by the
order, not the file), and the order told again from what the proofs cover only.

Each event line must hash to a leaf that its inclusion proof leads to the checkpoint's root
(RFC 9162 2.1.3.2); the reading (entries, balance, approvals and who decided them,
findings and their resolutions) is computed from those events alone. The gateway's
records, as fetched when the bundle was made, are shown as not covered and never enter
the reading. The checkpoint is vouched for by an anchors file (``--anchor``) or a trusted
key (``--trust-key``), or by nothing: then the reading says "not anchored".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.errors import UsageError
from walletctl.history.chain import ALL, event_leaf
from walletctl.history.merkle import verify_inclusion
from walletctl.models.operations import NAMES
from walletctl.ops.evidence import FORMAT, Anchor, EvidenceError, parse_anchor, read_anchors

MAX_LINE = 1 << 20  # bytes: a line longer than this is not one walletctl wrote
MAX_PROOF = 64  # hashes: a tree of 2**64 events
_MOVES = ("checkout", *NAMES)  # the movements its balance adds up (not a wallet's authorize)
_HEX = re.compile(r"[0-9a-f]{64}")
_AMOUNT = re.compile(r"\d{1,15}(\.\d{1,6})?")
_INTEGERS = frozenset(("entry", "http_status", "exit_code", "batch_row", "approval"))
_RESOLVED = re.compile(r"resolved finding #(\d+):")
NOT_ANCHORED = "not anchored: nothing outside the bundle vouches for its checkpoint"


@dataclass
class Reading:
    """What the bundle proves, and what it carries that nothing proves."""

    path: str
    reference: str
    merchant: str
    size: int
    root: str
    anchored: str | None  # what vouches for the checkpoint (None: not anchored)
    events: int = 0
    entries: list[dict[str, Any]] = field(default_factory=list)
    balance: dict[str, Any] = field(default_factory=dict)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    not_covered: list[dict[str, Any]] = field(default_factory=list)

    def reading(self) -> dict[str, Any]:
        """Everything the proofs cover (what an edit of the file cannot change unseen)."""
        return {"reference": self.reference, "merchant": self.merchant,
                "checkpoint": {"size": self.size, "root": self.root},
                "anchored": self.anchored or NOT_ANCHORED, "events": self.events,
                "entries": self.entries,
                "balance": self.balance, "approvals": self.approvals,
                "findings": self.findings}

    def to_dict(self) -> dict[str, Any]:
        return {"holds": True, "path": self.path, "reading": self.reading(),
                "notCovered": self.not_covered}


def check_bundle(path: Path, anchors_file: Path | None = None,
                 trust_key: Path | None = None) -> Reading:
    """Read and check the bundle at ``path`` (EvidenceError naming the first thing that
    does not hold)."""
    from walletctl.ops.checkpoint import public_key, signed_by

    anchors = read_anchors(anchors_file) if anchors_file is not None else None
    key = public_key(trust_key) if trust_key is not None else None
    lines = _lines(path)
    number, header = next(lines, (0, None))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise EvidenceError(f"line 1: not a bundle ({FORMAT}) that `walletctl order REF "
                            "--evidence FILE` wrote")
    reference = _text(header, "reference", number)
    merchant = header.get("merchant")
    if not isinstance(merchant, dict):
        raise EvidenceError("line 1: field 'merchant' missing or not an object")
    ids = (_text(merchant, "merchantId", number), _text(merchant, "storeId", number))
    point = _checkpoint(header.get("checkpoint"))
    assert point.size is not None
    assert point.root is not None
    vouched: list[str] = []
    if anchors is not None:
        line = next((a for a in anchors if (a.size, a.root) == (point.size, point.root)), None)
        if line is None:
            raise EvidenceError(f"checkpoint: the tree of {point.size} events with root "
                                f"{point.root[:16]}... is in no line of {anchors_file}")
        vouched.append(f"line {line.line} of {anchors_file}")
    if key is not None:
        why = signed_by(key, point.signed_text(), point.key_id, point.signature)
        if why is not None:
            raise EvidenceError(f"checkpoint: {why}")
        vouched.append(f"signed by the trusted key {point.key_id}")
    found = Reading(path=str(path), reference=reference, merchant=f"{ids[0]}/{ids[1]}",
                    size=point.size, root=point.root,
                    anchored=" and ".join(vouched) or None)
    story = _Story(reference, ids)
    root = bytes.fromhex(point.root)
    last = 0
    for number, data in lines:
        if not isinstance(data, dict):
            raise EvidenceError(f"line {number}: not a JSON object")
        if set(data) == {"event", "proof"}:
            seq, values = _event(data["event"], number)
            if seq <= last:
                raise EvidenceError(f"line {number}: event {seq} is out of order or repeated")
            if seq > point.size:
                raise EvidenceError(f"line {number}: event {seq} is after the checkpoint "
                                    f"({point.size} events)")
            if not verify_inclusion(seq - 1, point.size, event_leaf(seq, values),
                                    _proof(data["proof"], number), root):
                raise EvidenceError(f"line {number}: event {seq} is not in the checkpoint's "
                                    "tree (the event, its proof or the checkpoint was "
                                    "changed)")
            last = seq
            story.add(seq, dict(zip(ALL, values, strict=True)), number)
        elif set(data) == {"gateway", "fetchedAt"}:
            found.not_covered.append(_record(data, number))
        else:
            raise EvidenceError(f"line {number}: neither an event with its proof nor a "
                                "gateway record")
    stated = header.get("events")
    if type(stated) is not int or stated != story.count:
        raise EvidenceError(f"line 1: 'events' says {stated!r}; the bundle holds "
                            f"{story.count} event(s) with proofs")
    if not story.count:
        raise EvidenceError("the bundle holds no event of the order")
    story.tell(found)
    return found


# ------------------------------------------------------------------------------ parsing


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each line's JSON value, strictly parsed: no duplicate keys, no fractions or
    exponents (every amount is text), no NaN or Infinity, no integer of more than 18
    digits."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UsageError(f"check-evidence: cannot read {path}: {exc.strerror}") from None
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE + 1)
            except OSError as exc:
                raise EvidenceError(f"cannot read {path}: {exc.strerror}") from None
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE:
                raise EvidenceError(f"line {number}: longer than {MAX_LINE} bytes")
            if not raw.strip():
                continue
            try:
                yield number, json.loads(raw.decode("utf-8"), object_pairs_hook=_object,
                                         parse_float=_no_fraction, parse_int=_integer,
                                         parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                why = str(exc).split(": line ")[0] if isinstance(exc, ValueError) else \
                    "nested too deep"
                raise EvidenceError(f"line {number}: not a walletctl bundle line "
                                    f"({why[:120]})") from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key appears twice")
    return found


def _no_fraction(text: str) -> Any:
    raise ValueError(f"number {text[:20]} is not an integer (amounts are text)")


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a number")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > 18:
        raise ValueError("an integer of more than 18 digits")
    return int(text)


def _text(data: dict[str, Any], name: str, number: int) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise EvidenceError(f"line {number}: field {name!r} missing or not text")
    return value


def _checkpoint(data: Any) -> Anchor:
    if not isinstance(data, dict):
        raise EvidenceError("line 1: field 'checkpoint' missing or not an object")
    kept = {k: v for k, v in data.items() if k != "source"}
    try:
        point = parse_anchor(json.dumps(kept), "line 1: checkpoint", 1)
    except UsageError as exc:
        raise EvidenceError(exc.message) from None
    if point.size is None or point.root is None:
        raise EvidenceError("line 1: the checkpoint has no tree (size and root)")
    return point


def _event(data: Any, number: int) -> tuple[int, list[Any]]:
    """An event line's number and its values in the chain's column order."""
    if not isinstance(data, dict) or set(data) != {"seq", *ALL}:
        raise EvidenceError(f"line {number}: an event has exactly the history's columns")
    seq = data["seq"]
    if type(seq) is not int or seq < 1:
        raise EvidenceError(f"line {number}: the event's 'seq' is not a number of 1 or more")
    for name in ALL:
        value = data[name]
        kind = int if name in _INTEGERS else str
        if value is not None and type(value) is not kind:
            raise EvidenceError(f"line {number}: event {seq}'s {name!r} is not "
                                f"{'an integer' if kind is int else 'text'}")
    if data["kind"] not in ("begin", "complete") or type(data["entry"]) is not int:
        raise EvidenceError(f"line {number}: event {seq} is not a begin or complete event "
                            "of an entry")
    return seq, [data[name] for name in ALL]


def _proof(data: Any, number: int) -> list[bytes]:
    if not isinstance(data, list) or len(data) > MAX_PROOF or not all(
            isinstance(h, str) and _HEX.fullmatch(h) for h in data):
        raise EvidenceError(f"line {number}: the proof is not a list of hashes (64 hex "
                            "digits each)")
    return [bytes.fromhex(h) for h in data]


def _record(data: dict[str, Any], number: int) -> dict[str, Any]:
    """A gateway record as fetched: checked for form only, shown as not covered."""
    from pydantic import ValidationError

    from walletctl.models.records import TransactionRecord

    raw = data["gateway"]
    amount = raw.get("transactionAmount") if isinstance(raw, dict) else None
    if amount is not None and not (type(amount) is int or (
            isinstance(amount, str) and _AMOUNT.fullmatch(amount.removeprefix("-")))):
        raise EvidenceError(f"line {number}: a gateway record's transactionAmount "
                            f"{str(amount)[:20]!r} is not an amount")
    try:
        record = TransactionRecord.model_validate(raw)
    except ValidationError:
        raise EvidenceError(f"line {number}: a gateway record not in the gateway's "
                            "form") from None
    fetched = data["fetchedAt"]
    if not isinstance(fetched, str):
        raise EvidenceError(f"line {number}: 'fetchedAt' is not text")
    from walletctl.ops.evidence import record_data

    return {"gateway": record_data(record), "fetchedAt": fetched}


# ------------------------------------------------------------------------------ reading


class _Story:
    """The order told from its proven events: entries, balance, approvals, findings."""

    def __init__(self, reference: str, merchant: tuple[str, str]) -> None:
        self.reference = reference
        self.merchant = merchant
        self.count = 0
        self.begun: dict[int, dict[str, Any]] = {}
        self.latest: dict[int, dict[str, Any]] = {}  # entry -> its latest completion

    def add(self, seq: int, event: dict[str, Any], number: int) -> None:
        self.count += 1
        entry = int(event["entry"])
        if event["kind"] == "complete":
            if entry not in self.begun:
                raise EvidenceError(f"line {number}: event {seq} completes entry #{entry}, "
                                    "whose beginning is not in the bundle")
            self.latest[entry] = event
            return
        if event["original_ref"] != self.reference:
            raise EvidenceError(f"line {number}: event {seq} is on "
                                f"{event['original_ref']!r}, not the bundle's order "
                                f"{self.reference!r}")
        if event["merchant_id"] is not None and (
                event["merchant_id"], event["store_id"]) != self.merchant:
            raise EvidenceError(f"line {number}: event {seq} is of merchant "
                                f"{event['merchant_id']}/{event['store_id']}, not the "
                                "bundle's")
        if entry in self.begun:
            raise EvidenceError(f"line {number}: entry #{entry} is begun twice")
        if event["operation"] in _MOVES and event["amount"] is not None \
                and not _AMOUNT.fullmatch(event["amount"]):
            raise EvidenceError(f"line {number}: event {seq}'s amount "
                                f"{event['amount'][:20]!r} is not an amount")
        self.begun[entry] = event

    def tell(self, into: Reading) -> None:
        into.events = self.count
        totals = {"checkedOut": Decimal(0), "captured": Decimal(0), "refunded": Decimal(0)}
        currencies: set[str] = set()
        reversed_ = False
        spent: dict[int, list[dict[str, Any]]] = {}
        for entry, begin in sorted(self.begun.items()):
            done = self.latest.get(entry, {})
            outcome = done.get("outcome") or begin["outcome"] or "unknown"
            step = {"entry": entry, "time": begin["time"], "step": begin["operation"],
                    "reference": done.get("new_ref") or begin["new_ref"]
                    or begin["original_ref"], "amount": begin["amount"],
                    "currency": begin["currency"], "outcome": outcome, "by": _who(begin),
                    "reason": begin["reason"], "approval": begin["approval"],
                    "completed": done.get("time"),
                    "completedBy": _who(done) if done else None}
            if begin["operation"] in _MOVES:
                into.entries.append(step)
                if begin["approval"] is not None:
                    spent.setdefault(int(begin["approval"]), []).append(step)
                # a checkout the gateway accepted (created) is checked out; any other
                # movement counts once the gateway approved it
                if outcome == "approved" or (outcome, begin["operation"]) == (
                        "created", "checkout"):
                    if begin["currency"]:
                        currencies.add(begin["currency"])
                    amount = Decimal(begin["amount"]) if begin["amount"] else Decimal(0)
                    name = {"checkout": "checkedOut", "capture": "captured",
                            "refund": "refunded"}.get(begin["operation"])
                    if name is not None:
                        totals[name] += amount
                    else:
                        reversed_ = True
        for entry, begin in sorted(self.begun.items()):
            op = begin["operation"]
            if op == "approval":
                into.approvals.append({
                    "approval": begin["approval"], "decision": begin["outcome"],
                    "decidedBy": _who(begin), "at": begin["time"],
                    "reason": begin["reason"], "note": begin["note"], "entry": entry,
                    # the movement refused until approved (its request), then the one sent
                    "requestedBy": [{"entry": s["entry"], "by": s["by"]} for s in spent.get(
                        int(begin["approval"] or 0), []) if s["outcome"] == "refused"],
                    "spentBy": [{"entry": s["entry"], "by": s["by"], "outcome": s["outcome"]}
                                for s in spent.get(int(begin["approval"] or 0), [])
                                if s["outcome"] != "refused"]})
            elif op == "finding":
                into.findings.append({"finding": entry, "reference": begin["new_ref"],
                                      "note": begin["note"], "recordedBy": _who(begin),
                                      "at": begin["time"], "resolutions": []})
        by_id = {f["finding"]: f for f in into.findings}
        for entry, begin in sorted(self.begun.items()):
            if begin["operation"] != "resolve":
                continue
            match = _RESOLVED.match(begin["note"] or "")
            target = by_id.get(int(match.group(1))) if match else None
            resolution = {"entry": entry, "by": _who(begin), "at": begin["time"],
                          "resolution": begin["reason"], "note": begin["note"]}
            if target is not None:
                target["resolutions"].append(resolution)
            else:
                into.findings.append({"finding": None, "reference": begin["new_ref"],
                                      "note": None, "recordedBy": None, "at": None,
                                      "resolutions": [resolution]})
        into.balance = {"currency": ",".join(sorted(currencies)) or None,
                        **{k: f"{v:f}" for k, v in totals.items()}, "reversed": reversed_}


def _who(event: dict[str, Any]) -> str:
    """The authenticated database role when there is one, else the OS account and host
    the writer gave."""
    return str(event["operator"] or f"{event['os_user']}@{event['host']}")
