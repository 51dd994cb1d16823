"""What the history proves, and how it is shown to someone outside it (docs/history.md,
"Tamper evidence", "Anchors" and "Evidence bundles"): ``history verify`` (the chain, the
Merkle tree, the checkpoints of an anchors file: consistency proofs and signatures) and
``history anchor`` (a checkpoint, signed with ``--sign-key``); ``order REF --evidence FILE``
writes an order's bundle: its own events, each with its inclusion proof to one checkpoint,
and the gateway's records as fetched (:mod:`walletctl.ops.bundle_reader` checks one
offline). Nothing of another entry enters a bundle but the proofs' hashes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, UsageError, WalletctlError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.store import Broken, Head, HistoryStore
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.order import OrderView

FORMAT = "walletctl-evidence/2"
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
_KEY_ID = re.compile(r"[0-9a-f]{16}")
_SIGNATURE = re.compile(r"[A-Za-z0-9+/]{86}==")


@dataclass(frozen=True)
class Anchor:
    """A checkpoint kept outside the history: ``history anchor``'s line (``line``: where it
    was read in an anchors file, 0 when it was just made). ``size`` and ``root``: the Merkle
    tree of the first ``size`` events (its ``log``, the first leaf's hash, names the
    history); ``key_id`` and ``signature``: who vouched for it (``--sign-key``). A line
    written before the tree has only the chain's head."""

    event: int  # the newest event's number
    entry: int  # the entry it belongs to
    hash: str  # its hash: it covers every event before it
    time: str  # its recorded time (ISO, UTC)
    history: str  # where (a file's path, or the database's URL without a password)
    line: int = 0
    size: int | None = None
    root: str | None = None
    log: str | None = None
    key_id: str | None = None
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "line" and v is not None}

    def signed_text(self) -> bytes:
        from walletctl.ops.checkpoint import signed_text

        return signed_text(self.log or "", self.size or 0, self.root or "", self.hash,
                           self.time)


@dataclass(frozen=True)
class AnchorFailure:
    """An anchor this history no longer matches: ``found`` is the hash its event has now
    (None: no event of that number is left); ``why``: what else failed (its tree is not a
    prefix of this one, it is not consistent with the anchor before it, it is not signed
    by the trusted key)."""

    anchor: Anchor
    found: str | None
    why: str | None = None


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


def make_anchor(profile: Profile | None, sign_key: Path | None = None) -> Anchor:
    """The history's checkpoint: its head, the tree's size and root, the log's identity,
    signed with ``sign_key`` when given (reading only: an auditor's role is enough)."""
    from walletctl.history import open_profile_history
    from walletctl.ops.checkpoint import private_key, sign

    key = private_key(sign_key) if sign_key is not None else None  # before the history
    with open_profile_history(profile, purpose="walletctl history anchor") as store:
        head = store.head()
        where = store.where
        if head is None:
            raise ConfigError(f"history {where}: no events yet, nothing to anchor")
        root, log = store.tree_root(head.event).hex(), store.tree_root(1).hex()
    made = Anchor(head.event, head.entry, head.hash, head.time, where, size=head.event,
                  root=root, log=log)
    if key is None:
        return made
    kid, signature = sign(key, made.signed_text())
    return replace(made, key_id=kid, signature=signature)


def verify(profile: Profile | None, *, anchors_file: Path | None,
           expect_head: str | None, full: bool = False,
           trust_key: Path | None = None) -> Verified:
    """Check the history against the checkpoints of ``anchors_file`` (each still here with
    its hash, each tree a prefix of today's and of the next one's), then walk the chain: with
    anchors, only the events after the newest one (so the cost is what was added since),
    unless ``full``; without, all of it. Compare ``expect_head``; look for spent approvals
    whose decision is not in the chain. Usage errors (a malformed anchors file) are raised
    before the history is opened."""
    from walletctl.history import open_profile_history

    anchors, trusted = _verify_options(anchors_file, expect_head, full, trust_key)
    since = max(anchors, key=lambda a: a.event) if anchors and not full else None
    with open_profile_history(profile, purpose="walletctl history verify") as store:
        count, broken = store.verify(None if since is None else (since.event, since.hash))
        head = store.head()
        hashes = store.hashes(a.event for a in anchors)
        gone = expect_head is not None and broken is None and not store.holds(expect_head)
        undecided = store.spent_undecided()
        where, backend = store.where, store.backend
        failures = tuple(AnchorFailure(a, hashes.get(a.event)) for a in anchors
                         if hashes.get(a.event) != a.hash)
        if anchors and not failures and broken is None and head is not None:
            failures = _checkpoints(store, anchors, head.event, trusted)
    return Verified(history=where, backend=backend, events=count, broken=broken, head=head,
                    anchors=len(anchors),
                    failures=failures, expect_head=expect_head, head_gone=gone,
                    spent_undecided=None if undecided is None else tuple(undecided),
                    since=since)


def _verify_options(anchors_file: Path | None, expect_head: str | None, full: bool,
                    trust_key: Path | None) -> tuple[list[Anchor], Ed25519PublicKey | None]:
    """``verify``'s options checked, before any history is opened: (the anchors file's
    checkpoints, the trusted key)."""
    if expect_head is not None and not _HEAD_PREFIX.fullmatch(expect_head):
        raise UsageError("--expect-head: must be 12 to 64 hex digits of a head hash that "
                         "`walletctl history verify` printed")
    anchors = read_anchors(anchors_file) if anchors_file is not None else []
    if trust_key is not None and not anchors_file:
        raise UsageError("--trust-key: goes with --anchor FILE (the checkpoints it vouches "
                         "for)")
    if full and not anchors_file:
        raise UsageError("--full: goes with --anchor FILE (without it the whole chain is "
                         "walked already)")
    from walletctl.ops.checkpoint import public_key

    return anchors, public_key(trust_key) if trust_key is not None else None


def _checkpoints(store: HistoryStore, anchors: list[Anchor], size: int,
                 trusted: Ed25519PublicKey | None) -> tuple[AnchorFailure, ...]:
    """Each checkpoint's tree is a prefix of the history's tree now, and of the next
    checkpoint's (consistency proofs from the stored tree, checked against the roots each
    line states); with ``trusted``, each is signed by that key."""
    from walletctl.history.merkle import verify_consistency
    from walletctl.history.tree import TreeError
    from walletctl.ops.checkpoint import signed_by

    failures: list[AnchorFailure] = []
    try:
        now = store.tree_root(size)
    except TreeError as exc:  # the walk found it whole: only a node written since is missing
        return tuple(AnchorFailure(a, a.hash, exc.message) for a in anchors)
    checked = sorted((a.size, a.line, a.root, a) for a in anchors
                     if a.size is not None and a.root is not None)
    for a in anchors:
        if trusted is not None:
            why = signed_by(trusted, a.signed_text(), a.key_id, a.signature)
            if why is not None:
                failures.append(AnchorFailure(a, a.hash, f"the checkpoint {why}"))
                continue
        if a.size is None or a.root is None:
            if trusted is not None:
                failures.append(AnchorFailure(a, a.hash, "the line has no tree to check"))
            continue
        if not verify_consistency(a.size, size, bytes.fromhex(a.root), now,
                                  store.consistency_proof(a.size, size)):
            failures.append(AnchorFailure(a, a.hash, f"its tree of {a.size} events is not a "
                                          f"prefix of the history's tree of {size} now"))
    for (old, line, old_root, _), (new, _, new_root, newer) in pairwise(checked):
        if new > size:
            continue  # named above: the history no longer holds it
        if not verify_consistency(old, new, bytes.fromhex(old_root), bytes.fromhex(new_root),
                                  store.consistency_proof(old, new)):
            failures.append(AnchorFailure(newer, newer.hash, (
                f"its tree is not an extension of line {line}'s (the history was "
                "rewritten between the two checkpoints)")))
    return tuple(failures)


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
            found.append(parse_anchor(line, f"{flag} {path} line {number}", number))
    if not found:
        raise UsageError(f"{flag}: {path} holds no anchor (lines that `walletctl history "
                         "anchor` printed)")
    return found


def parse_anchor(line: str, where: str, number: int) -> Anchor:
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
    for name, pattern, kind in (("size", None, "a number of 1 or more"),
                                ("root", _HASH, "64 lowercase hex digits"),
                                ("log", _HASH, "64 lowercase hex digits"),
                                ("key_id", _KEY_ID, "16 lowercase hex digits"),
                                ("signature", _SIGNATURE, "an Ed25519 signature in base64")):
        if name not in data:
            continue
        value = data[name]
        good = (type(value) is int and value >= 1 if pattern is None else
                isinstance(value, str) and pattern.fullmatch(value) is not None)
        if not good:
            raise UsageError(f"{where}: field {name!r} must be {kind}")
        values[name] = value
    if ("size" in values) != ("root" in values):
        raise UsageError(f"{where}: fields 'size' and 'root' go together")
    if values.get("size", values["event"]) != values["event"]:
        raise UsageError(f"{where}: field 'size' must be the event's number")
    return Anchor(**values, line=number)


# ------------------------------------------------------------------------------ writing


@dataclass(frozen=True)
class Evidence:
    """The bundle ``order --evidence`` wrote: where, how many events, the checkpoint its
    proofs lead to (its size and root) and where that came from."""

    path: Path
    events: int
    anchor_event: int
    anchor_hash: str
    anchored: str
    anchors_file: Path | None = None  # the anchors file a line of which is the checkpoint
    anchor_line: int = 0  # that line's number
    signed: bool = False  # that line is signed (``--trust-key`` can check it)


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


def order_events(store: HistoryStore, view: OrderView) -> list[int]:
    """The entries whose events a bundle carries: the order's own (its movements, its
    approval decisions, its findings and their resolutions: every entry begun on the
    order's reference for this merchant), and the decisions on its approvals (index
    look-ups: the history's size does not matter)."""
    ids = {e.id for e in view.entries}
    ids.update(store.decision_entries(a.id for a in view.approvals))
    return sorted(ids)


def checkpoint_for(store: HistoryStore, last: int,
                   anchors_file: Path | None) -> tuple[Anchor, str]:
    """The checkpoint a bundle's proofs lead to: the newest line of ``anchors_file`` at or
    after the order's last event whose tree is the history's (its root recomputed from the
    stored tree), else the history's head now (anchored by nothing)."""
    anchors = read_anchors(anchors_file) if anchors_file is not None else []
    for a in sorted(anchors, key=lambda a: -(a.size or 0)):
        if a.size is not None and a.root is not None and a.size >= last:
            head = store.head()
            if head is not None and a.size <= head.event \
                    and store.tree_root(a.size).hex() == a.root:
                return a, f"anchors {anchors_file} line {a.line}"
    head = store.head()
    assert head is not None  # the order's entries are events
    made = Anchor(head.event, head.entry, head.hash, head.time, store.where,
                  size=head.event, root=store.tree_root(head.event).hex(),
                  log=store.tree_root(1).hex())
    made_at = "the history's head when the bundle was made"
    return made, made_at if anchors_file is None else \
        f"{made_at} (no line of {anchors_file} holds it)"


def write_bundle(path: Path, store: HistoryStore, view: OrderView, made_by: str,
                 anchors_file: Path | None) -> Evidence:
    """Write the bundle to ``path``: NDJSON, one object a line (a header, each of the
    order's events with its inclusion proof, each gateway record); the file replaced
    whole, never left half-written. Nothing of another entry: only the proofs' hashes."""
    ids = order_events(store, view)
    if not ids:
        raise ConfigError(f"order {view.reference}: the history has no entry on it: "
                          "no evidence to bundle", hint=f"walletctl order {view.reference} "
                          "shows what the gateway has")
    events = store.entry_events(ids)
    anchor, anchored = checkpoint_for(store, int(events[-1]["seq"]), anchors_file)
    size = anchor.size or anchor.event
    proofs = store.inclusion_proofs((int(e["seq"]) for e in events), size)
    head = {"format": FORMAT, "reference": view.reference,
            "merchant": {"merchantId": view.merchant_id, "storeId": view.store_id},
            "checkpoint": anchor.to_dict() | {"source": anchored}, "events": len(events),
            "made": {"at": view.now, "by": made_by, "history": view.history,
                     "backend": view.backend}}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # private, like the history it comes from: a customer's order
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                  encoding="utf-8") as out:
            out.write(_line(head))
            for event in events:
                out.write(_line({"event": event, "proof": [
                    h.hex() for h in proofs[int(event["seq"])]]}))
            for record in view.records:
                out.write(_line({"gateway": record_data(record),
                                 "fetchedAt": view.fetched_at}))
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"--evidence {path}: cannot write it: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return Evidence(path, len(events), anchor.event, anchor.root or anchor.hash, anchored,
                    anchors_file=anchors_file if anchor.line else None, anchor_line=anchor.line,
                    signed=anchor.signature is not None)


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def record_data(record: TransactionRecord) -> dict[str, Any]:
    return record.model_dump(mode="json", by_alias=True, include=set(RECORD_FIELDS),
                             exclude_none=True)
