"""What the history's chain proves, and how it is shown to someone outside it
(docs/history.md, "Tamper evidence" and "Evidence bundles"): ``history verify`` and
``history anchor``; ``order REF --evidence FILE`` writes an order's bundle (its records,
entries, approvals, findings and the chain's events from its first event to a head), and
``history check-evidence FILE`` checks one offline. Nothing but what the history and lookups
hold enters a bundle.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.config.dburl import DbUrl
from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, UsageError, WalletctlError
from walletctl.history.chain import ALL, event_hash
from walletctl.history.store import Entry

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.store import Broken, Head, HistoryStore
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.order import OrderView

FORMAT = "walletctl-evidence/1"
# The record fields a bundle keeps: what the comparison and the balance read (no address,
# no payment details).
RECORD_FIELDS = ("id", "state", "currency_code", "transaction_amount",
                 "client_system_transaction_id", "client_system_invoice_id", "type",
                 "transaction_date_time", "provider_state_code")


class EvidenceError(WalletctlError):
    """A bundle that does not hold: what broke, named. Exit 3 (like a history that fails
    ``history verify`` against an anchor)."""

    exit_code = ExitCode.CONFIG


# ------------------------------------------------------------------------------ the chain


_HASH = re.compile(r"[0-9a-f]{64}")
_HEAD_PREFIX = re.compile(r"[0-9a-fA-F]{12,64}")


@dataclass(frozen=True)
class Anchor:
    """A head kept outside the history: ``history anchor``'s line (``line``: where it was
    read in an anchors file, 0 when it was just made)."""

    event: int  # the newest event's number
    entry: int  # the entry it belongs to
    hash: str  # its hash: it covers every event before it
    time: str  # its recorded time (ISO, UTC)
    history: str  # where (a file's path, or the database's URL without a password)
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "line"}


@dataclass(frozen=True)
class AnchorFailure:
    """An anchor this history no longer matches: ``found`` is the hash its event has now
    (None: no event of that number is left)."""

    anchor: Anchor
    found: str | None


@dataclass(frozen=True)
class Verified:
    """What ``history verify`` found: the chain walked, then the outside evidence."""

    history: str
    backend: str  # sqlite | postgresql
    events: int  # events checked before the first broken one (all when intact)
    broken: Broken | None
    head: Head | None
    anchors: int  # anchor lines checked
    failures: tuple[AnchorFailure, ...]
    expect_head: str | None
    head_gone: bool  # --expect-head names no event of the history
    spent_undecided: tuple[int, ...] | None  # None: this role may not read the approvals
    since: Anchor | None = None  # the anchor the walk started after (None: the first event)

    @property
    def intact(self) -> bool:
        return (self.broken is None and not self.failures and not self.head_gone
                and not self.spent_undecided)


def make_anchor(profile: Profile | None) -> Anchor:
    """The history's head as an anchor (reading only: an auditor's role is enough)."""
    from walletctl.history import history_location, open_location

    found = history_location(profile)
    with open_location(found, create=False, purpose="walletctl history anchor") as store:
        head = store.head()
        where = store.where
    if head is None:
        raise ConfigError(f"history {where}: no events yet, nothing to anchor")
    return Anchor(head.event, head.entry, head.hash, head.time, where)


def verify(profile: Profile | None, *, anchors_file: Path | None,
           expect_head: str | None, since_anchor: Path | None = None) -> Verified:
    """Walk the chain (``since_anchor``: only after the newest anchor of that file); check
    it against the anchors (every line of ``anchors_file`` and ``since_anchor``) and
    ``expect_head``; look for spent approvals whose decision is not in the chain. Usage
    errors (a malformed anchors file) are raised before the history is opened."""
    from walletctl.history import history_location, open_location

    if expect_head is not None and not _HEAD_PREFIX.fullmatch(expect_head):
        raise UsageError("--expect-head: must be 12 to 64 hex digits of a head hash that "
                         "`walletctl history verify` printed")
    anchors = read_anchors(anchors_file) if anchors_file is not None else []
    since = None
    if since_anchor is not None:
        kept = read_anchors(since_anchor, flag="--since-anchor")
        since = max(kept, key=lambda a: a.event)
        anchors += kept
    found = history_location(profile)
    with open_location(found, create=False, purpose="walletctl history verify") as store:
        count, broken = store.verify(None if since is None else (since.event, since.hash))
        head = store.head()
        hashes = store.hashes(a.event for a in anchors)
        gone = expect_head is not None and broken is None and not store.holds(expect_head)
        undecided = store.spent_undecided()
        where = store.where
    failures = tuple(AnchorFailure(a, hashes.get(a.event)) for a in anchors
                     if hashes.get(a.event) != a.hash)
    return Verified(history=where, backend="postgresql" if isinstance(found, DbUrl) else
                    "sqlite", events=count, broken=broken, head=head, anchors=len(anchors),
                    failures=failures, expect_head=expect_head, head_gone=gone,
                    spent_undecided=None if undecided is None else tuple(undecided),
                    since=since)


def read_anchors(path: Path, *, flag: str = "--anchor") -> list[Anchor]:
    """Every anchor line of ``path`` (blank lines and ``#`` comments skipped); a line that
    is not one is a usage error naming the option, the line and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UsageError(f"{flag}: cannot read {path}: {why}") from None
    found: list[Anchor] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            found.append(_anchor(line, f"{flag} {path} line {number}", number))
    if not found:
        raise UsageError(f"{flag}: {path} holds no anchor (lines that `walletctl history "
                         "anchor` printed)")
    return found


def _anchor(line: str, where: str, number: int) -> Anchor:
    try:
        data = json.loads(line)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: not a JSON object (a line `walletctl history anchor` "
                         "printed)")
    values: dict[str, Any] = {}
    for name, kind in (("event", "a number of 1 or more"), ("entry", "a number of 1 or more"),
                       ("hash", "64 lowercase hex digits"), ("time", "text"),
                       ("history", "text")):
        value = data.get(name)
        good = (isinstance(value, int) and not isinstance(value, bool) and value >= 1
                if name in ("event", "entry") else
                isinstance(value, str) and _HASH.fullmatch(value) is not None
                if name == "hash" else isinstance(value, str))
        if not good:
            what = "missing" if name not in data else f"must be {kind}"
            raise UsageError(f"{where}: field {name!r} {what}")
        values[name] = value
    return Anchor(**values, line=number)


# ------------------------------------------------------------------------------ writing


@dataclass(frozen=True)
class Evidence:
    """The bundle ``order --evidence`` wrote: where, how many events, the head it ends at."""

    path: Path
    events: int
    anchor_event: int
    anchor_hash: str
    anchored: str


def order_with_evidence(profile: Profile, client: GatewayClient, reference: str,
                        path: Path, anchors: Path | None) -> tuple[OrderView, Evidence]:
    """``walletctl order REF --evidence FILE``: the view, and its bundle written to
    ``path`` from the same reading of the history (ending at the first matching head of
    ``anchors``, else the history's head)."""
    from walletctl.history.approvals import acting_as
    from walletctl.ops.order import order_view

    written: list[Evidence] = []

    def keep(store: HistoryStore, view: OrderView) -> None:
        written.append(write_bundle(path, store, view, acting_as(store), anchors))

    view = order_view(profile, client, reference, keep=keep)
    return view, written[0]


def segment(store: HistoryStore, view: OrderView,
            anchors_file: Path | None) -> tuple[int, Anchor, str]:
    """The events a bundle carries: the order's first event, its head (the first anchor of
    ``anchors_file`` at or after its last event that the history matches, else the
    history's head) and where that head came from."""
    anchors = read_anchors(anchors_file) if anchors_file is not None else []
    ids = sorted({e.id for e in view.entries})
    if not ids:
        raise ConfigError(f"order {view.reference}: the history has no entry on it: "
                          "no evidence to bundle", hint=f"walletctl order {view.reference} "
                          "shows what the gateway has")
    first, last = store.event_span(ids)
    held = store.hashes(a.event for a in anchors if a.event >= last)
    for a in sorted(anchors, key=lambda a: a.event):
        if a.event >= last and held.get(a.event) == a.hash:
            return first, a, f"anchors {anchors_file} line {a.line}"
    head = store.head()
    assert head is not None  # the order's entries are events
    return (first, Anchor(head.event, head.entry, head.hash, head.time, store.where),
            "the head when the bundle was made (no anchor given matched)")


def write_bundle(path: Path, store: HistoryStore, view: OrderView, made_by: str,
                 anchors_file: Path | None) -> Evidence:
    """Write the bundle to ``path`` (the events as they are read, a row at a time; the file
    replaced whole, never left half-written)."""
    first, anchor, anchored = segment(store, view, anchors_file)
    head = {
        "format": FORMAT,
        "made": {"at": view.now, "by": made_by, "history": view.history,
                 "backend": view.backend},
        "reference": view.reference,
        "merchant": {"merchantId": view.merchant_id, "storeId": view.store_id},
        "gateway": {"fetchedAt": view.fetched_at,
                    "records": [record_data(r) for r in view.records]},
        "history": [e.to_dict() for e in view.entries],
        "approvals": [_approval_data(a.to_dict(view.now)) for a in view.approvals],
        "findings": [f.as_dict() for f in view.findings],
        "balance": None if view.balance is None else _balance_data(view),
        "verdict": {"agrees": not view.disagreements, "text": view.verdict},
        "anchor": {**anchor.to_dict(), "source": anchored},
    }
    count = 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # private, like the history it comes from: customers' orders, not for every reader
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                  encoding="utf-8") as out:
            text = json.dumps(head, indent=1, ensure_ascii=False)
            out.write(text[:-2] + ',\n "events": [')
            for event in store.chain_events(first, anchor.event):
                out.write(("\n  " if count == 0 else ",\n  ")
                          + json.dumps(event, ensure_ascii=False, separators=(",", ":")))
                count += 1
            out.write("\n ]\n}\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"--evidence {path}: cannot write it: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return Evidence(path, count, anchor.event, anchor.hash, anchored)


def record_data(record: TransactionRecord) -> dict[str, Any]:
    return record.model_dump(mode="json", by_alias=True, include=set(RECORD_FIELDS),
                             exclude_none=True)


def _approval_data(found: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if k not in ("batch_detail", "bound_rows")}


def _balance_data(view: OrderView) -> dict[str, Any]:
    b = view.balance
    assert b is not None
    return {"currency": b.currency, "authorised": f"{b.authorised:f}",
            "captured": f"{b.captured:f}", "refunded": f"{b.refunded:f}",
            "reversed": b.reversed, "capturable": f"{b.capturable:f}",
            "refundable": f"{b.refundable:f}"}


# ----------------------------------------------------------------------------- checking


@dataclass
class Checked:
    """A bundle that holds: what was checked."""

    path: str
    reference: str
    events: int
    entries: int
    approvals: int
    findings: int
    records: int
    anchor: dict[str, Any]
    anchors_file: str | None


def check_bundle(path: Path, anchors_file: Path | None = None) -> Checked:
    """Check the bundle at ``path``: its events hash and link up to its head, and every
    entry, approval, finding and balance it states is what those events and records give;
    the first thing that does not hold raises EvidenceError naming it."""
    anchors = read_anchors(anchors_file) if anchors_file is not None else None
    doc = _load(path)
    events = _events(doc)
    anchor = _dict(doc, "anchor")
    last = events[-1]
    if (last["seq"], last["hash"]) != (anchor.get("event"), anchor.get("hash")):
        raise EvidenceError(f"anchor: the last event is #{last['seq']} with hash "
                            f"{str(last['hash'])[:16]}..., not the bundle's anchor")
    if anchors is not None and not any(
            (a.event, a.hash) == (last["seq"], last["hash"]) for a in anchors):
        raise EvidenceError(f"anchor: event #{last['seq']} with this hash is in no line of "
                            f"{anchors_file}: the bundle's chain is not the one anchored")
    reference = _text(doc, "reference")
    merchant = _dict(doc, "merchant")
    entries = _entries(events)
    _same_entries(doc, entries, reference, (merchant.get("merchantId"),
                                            merchant.get("storeId")))
    stated = {int(e["id"]): e for e in _list(doc, "history")}
    _approvals(doc, events, entries)
    _findings(doc, events)
    records = _records(doc)
    _gateway_story(doc, reference, [entries[i] for i in sorted(stated)], records)
    return Checked(str(path), reference, len(events), len(stated),
                   len(_list(doc, "approvals")), len(_list(doc, "findings")), len(records),
                   anchor, None if anchors_file is None else str(anchors_file))


def _load(path: Path) -> dict[str, Any]:
    """The bundle's document (any size: it carries a stretch of the history's chain)."""
    from walletctl.errors import RequestValidationError
    from walletctl.ops.user_files import read_document

    try:
        doc = read_document(path, "FILE", limit=None)
    except RequestValidationError:
        raise EvidenceError(f"{path}: not a JSON document (a bundle that "
                            "`walletctl order REF --evidence` wrote)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise EvidenceError(f"{path}: field 'format' must be {FORMAT!r}")
    return doc


def _dict(doc: dict[str, Any], name: str) -> dict[str, Any]:
    value = doc.get(name)
    if not isinstance(value, dict):
        raise EvidenceError(f"field {name!r}: missing or not an object")
    return value


def _list(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = doc.get(name)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise EvidenceError(f"field {name!r}: missing or not a list of objects")
    return value


def _text(doc: dict[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise EvidenceError(f"field {name!r}: missing or not text")
    return value


def _events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The events, each hashing to itself and linking to the one before it."""
    events = _list(doc, "events")
    if not events:
        raise EvidenceError("events: none (a bundle carries the order's events)")
    columns = ("seq", *ALL, "prev_hash", "hash")
    expected: int | None = None
    prev: str | None = None
    for event in events:
        if set(event) != set(columns):
            raise EvidenceError(f"events: an event with fields other than the chain's "
                                f"({sorted(set(event) ^ set(columns))[:3]})")
        seq = event["seq"]
        if not isinstance(seq, int) or (expected is not None and seq != expected):
            raise EvidenceError(f"events: event #{expected} is missing (the next one is "
                                f"#{seq}): deleted or reordered")
        if prev is not None and event["prev_hash"] != prev:
            raise EvidenceError(f"events: event #{seq} does not follow event #{seq - 1}")
        values = [event[c] for c in ALL]
        if not isinstance(event["prev_hash"], str) or event_hash(
                event["prev_hash"], seq, values) != event["hash"]:
            raise EvidenceError(f"events: event #{seq} (entry #{event['entry']}) was changed "
                                "after it was written: its hash does not match it")
        prev, expected = str(event["hash"]), seq + 1
    return events


# An entry's fields its latest completion overrides when it has them (the listing's COALESCE)
_COMPLETED = ("new_ref", "outcome", "http_status", "exit_code", "note")


def _entries(events: list[dict[str, Any]]) -> dict[int, Entry]:
    """Each entry begun in the segment, merged with its latest completion (as listed)."""
    begun: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["kind"] in ("begin", "complete"):
            (begun if e["kind"] == "begin" else done)[int(e["entry"])] = e
    found: dict[int, Entry] = {}
    for n, b in begun.items():
        c = done.get(n, {})
        merged: dict[str, Any] = {f.name: b.get(f.name) for f in fields(Entry)}
        merged.update({k: c[k] for k in _COMPLETED if c.get(k) is not None})
        if merged["outcome"] is None:
            merged["outcome"] = "unknown"
        found[n] = Entry(**{**merged, "id": n, "completed": c.get("time"),
                            "completed_by": c.get("operator")})
    return found


_COMPARED = ("time", "operation", "original_ref", "new_ref", "amount", "currency", "outcome",
             "reason", "operator", "approval", "merchant_id", "store_id", "batch_id")


def _same_entries(doc: dict[str, Any], entries: dict[int, Entry], reference: str,
                  merchant: tuple[Any, Any]) -> None:
    """The bundle's entries are the chain's, field by field, and none of the order's is
    left out."""
    stated: dict[int, dict[str, Any]] = {}
    for e in _list(doc, "history"):
        n = e.get("id")
        if not isinstance(n, int) or n not in entries:
            raise EvidenceError(f"history: entry #{n} is not in the bundle's events")
        stated[n] = e
    for n, e in stated.items():
        chain = entries[n].to_dict()
        for name in _COMPARED:
            if e.get(name) != chain.get(name):
                raise EvidenceError(f"history: entry #{n}'s {name} is {e.get(name)!r}; the "
                                    f"chain says {chain.get(name)!r}")
    for n, entry in entries.items():
        if (entry.original_ref == reference and n not in stated
                and (entry.merchant_id, entry.store_id) in (merchant, (None, None))):
            raise EvidenceError(f"history: entry #{n} ({entry.operation} on {reference}) is "
                                "in the chain but left out of the bundle")


def _approvals(doc: dict[str, Any], events: list[dict[str, Any]],
               entries: dict[int, Entry]) -> None:
    """Each approval binds the movement that spent it, and was decided in the chain by
    someone other than its requester; none an entry spent is left out."""
    from walletctl.history.approvals import bound_hash

    approvals = {a.get("id"): a for a in _list(doc, "approvals")}
    for n, entry in entries.items():
        if entry.approval is not None and entry.operation != "approval" \
                and entry.approval not in approvals and entry.original_ref == doc["reference"]:
            raise EvidenceError(f"approvals: entry #{n} spent approval #{entry.approval}, "
                                "which the bundle leaves out")
    for number, a in approvals.items():
        if bound_hash(a) != a.get("request_hash"):
            raise EvidenceError(f"approvals: #{number}'s request_hash does not match what it "
                                "binds (a bound field was changed)")
        if a.get("state") in ("approved", "spent"):
            _decided(number, a, events)
        if a.get("state") == "spent" and a.get("kind") == "single":
            _spent(number, a, entries)


def _decided(number: Any, a: dict[str, Any], events: list[dict[str, Any]]) -> None:
    said = [e for e in events if e["kind"] == "begin" and e["operation"] == "approval"
            and e["approval"] == number and e["outcome"] == "approved"]
    if not said:
        raise EvidenceError(f"approvals: #{number} is {a.get('state')} but no approving "
                            "decision is in the chain")
    who = said[0]["operator"] or said[0]["os_user"]
    if who != a.get("decided_by") or who == a.get("requester"):
        raise EvidenceError(f"approvals: #{number} says decided by {a.get('decided_by')!r}; "
                            f"the chain says {who!r}")


def _spent(number: Any, a: dict[str, Any], entries: dict[int, Entry]) -> None:
    spent = a.get("spent_entry")
    spender = entries.get(spent) if isinstance(spent, int) else None
    if spender is None or spender.approval != number:
        raise EvidenceError(f"approvals: #{number} says spent by entry #{spent}, which the "
                            "chain does not show spending it")
    for name in ("operation", "original_ref", "new_ref", "amount", "currency", "reason",
                 "merchant_id", "store_id"):
        if getattr(spender, name) != a.get(name):
            raise EvidenceError(f"approvals: #{number} approved {name} {a.get(name)!r}; "
                                f"entry #{spent} moved {getattr(spender, name)!r}")


def _findings(doc: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Each finding on file was recorded (and resolved, with its note) in the chain."""
    steps = {(e["operation"], int(e["entry"])): e for e in events if e["kind"] == "begin"}
    for f in _list(doc, "findings"):
        filed = f.get("finding")
        if filed is None:
            continue
        if not isinstance(filed, dict):
            raise EvidenceError("findings: a finding's 'finding' is not an object")
        number = filed.get("id")
        recorded = steps.get(("finding", number)) if isinstance(number, int) else None
        if recorded is None or recorded["new_ref"] != f.get("reference"):
            raise EvidenceError(f"findings: #{number} on {f.get('reference')} was not "
                                "recorded in the chain")
        if filed.get("state") == "resolved" and not _resolved_in(events, f.get("reference"),
                                                                  filed):
            raise EvidenceError(f"findings: #{number}'s resolution by "
                                f"{filed.get('resolvedBy')!r} ({filed.get('resolution')!r}) "
                                "is not the chain's")


def _resolved_in(events: list[dict[str, Any]], reference: Any, filed: dict[str, Any]) -> bool:
    return any(e["kind"] == "begin" and e["operation"] == "resolve"
               and e["new_ref"] == reference and e["reason"] == filed.get("resolution")
               and (e["operator"] or e["os_user"]) == filed.get("resolvedBy") for e in events)


def _records(doc: dict[str, Any]) -> list[TransactionRecord]:
    from pydantic import ValidationError

    from walletctl.models.records import TransactionRecord

    gateway = _dict(doc, "gateway")
    raw = gateway.get("records")
    if not isinstance(raw, list):
        raise EvidenceError("gateway: field 'records' missing or not a list")
    try:
        return [TransactionRecord.model_validate(r) for r in raw]
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise EvidenceError(f"gateway: a record's {where} is not the gateway's form") from None


def _gateway_story(doc: dict[str, Any], reference: str, entries: Iterable[Entry],
                   records: list[TransactionRecord]) -> None:
    """The stated balance, findings and verdict are what the records and entries give."""
    from walletctl.ops.order import findings_on

    found = findings_on(reference, list(entries), records)
    stated = _list(doc, "findings")
    said = sorted((f.get("kind"), f.get("reference")) for f in stated)
    if said != sorted((f.kind, f.reference) for f in found):
        raise EvidenceError(f"findings: the bundle states {said}; its records and entries "
                            f"give {sorted((f.kind, f.reference) for f in found)}")
    _same_balance(doc.get("balance"), reference, records)
    verdict = _dict(doc, "verdict")
    open_named = [f for f in stated if f.get("kind") != "unchecked"
                  and not (isinstance(f.get("finding"), dict)
                           and f["finding"].get("state") == "resolved")]
    if verdict.get("agrees") is not (not open_named):
        raise EvidenceError(f"verdict: 'agrees' is {verdict.get('agrees')}, but "
                            f"{len(open_named)} open finding(s) are stated")


def _same_balance(stated: Any, reference: str, records: list[TransactionRecord]) -> None:
    """The stated balance is the one the records give (none when they give none)."""
    from walletctl.errors import RefusedError
    from walletctl.models.ledger import balance_from_records

    try:
        balance = balance_from_records(reference, records)
    except RefusedError:
        if stated is not None:
            raise EvidenceError("balance: stated, but the records give none") from None
        return
    for name in ("authorised", "captured", "refunded", "capturable", "refundable"):
        value = stated.get(name) if isinstance(stated, dict) else None
        if value is None or Decimal(str(value)) != getattr(balance, name):
            raise EvidenceError(f"balance: {name} is {value}; the records give "
                                f"{getattr(balance, name):f}")
