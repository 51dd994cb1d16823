"""``walletctl order REF``: one order as the gateway and the desk's history each tell it — one
lookup, the history's entries and approval requests on it, recon's comparison
(:func:`walletctl.ops.recon.compare.compare_original`), the balance, and one verdict. It
writes nothing.

REF may be a follow-up's reference (``ORDER-1-REF1``, as a customer quotes it): the order
shown is then its original's, named as such. The history says whose follow-up it is (an
entry sent as it, or a finding on it); else a reference of the operations' tags
(``-CAP2``, ``-REF1``, ``-REV1``) that the gateway keeps as a follow-up's record is taken
for a follow-up of the reference before the tag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, RefusedError
from walletctl.history.store import Entry, Filters
from walletctl.models.ledger import Balance, balance_from_records, kind_of
from walletctl.models.operations import FOLLOW_UPS, OP_OF_KIND, ORIGINAL_KINDS
from walletctl.models.outcome import find_record
from walletctl.ops.money.earlier import lookup_or_none
from walletctl.ops.recon.compare import (
    LABELS,
    MISMATCHES,
    OPERATIONS,
    Counts,
    Expected,
    Finding,
    Totals,
    compare_original,
    seen,
    unapproved,
)
from walletctl.ops.recon.run import existing_history, ours

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.approvals import Approval
    from walletctl.history.store import HistoryStore
    from walletctl.models.records import TransactionRecord

# the record kinds -> the step's name (the history's operation names)
_STEP_OF_KIND: dict[str, str] = {**dict.fromkeys(ORIGINAL_KINDS, "checkout"), **OP_OF_KIND}
# a derived follow-up reference: the original, then -CAP1, -REF2, -REV1, ... (the tags)
_TAGGED = re.compile(r"(?P<original>.+)-(?:" + "|".join(op.tag for op in FOLLOW_UPS)
                     + r")[1-9][0-9]*")


@dataclass(frozen=True)
class Step:
    """One line of the order's timeline: a history entry (with the gateway's record under
    its reference, when it was sent), or a record at the gateway no entry was sent as."""

    time: str  # UTC, ISO (the history's form); the gateway's date when no entry is behind it
    step: str  # checkout, capture, refund, reverse, approval, ...
    reference: str
    amount: str | None  # major units, as text
    currency: str | None
    entry: Entry | None = None
    record: TransactionRecord | None = None

    def as_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"time": self.time, "step": self.step, "reference": self.reference,
                "amount": self.amount, "currency": self.currency,
                "entry": None if e is None else e.id,
                "outcome": None if e is None else e.outcome,
                "operator": None if e is None else e.who,
                "reason": None if e is None else e.reason,
                "approval": None if e is None else e.approval,
                "gatewayState": None if self.record is None else self.record.state}


@dataclass
class OrderView:
    reference: str
    profile: str
    history: str  # the file's path or the database URL without a password ("" when none)
    backend: str  # sqlite | postgresql | none
    now: str
    zone: str | None = None  # the profile's time zone (how the gateway's dates are read)
    records: list[TransactionRecord] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    balance: Balance | None = None
    balance_note: str | None = None  # why there is no balance (no original at the gateway)
    merchant_id: str = ""
    store_id: str = ""
    fetched_at: str = ""  # when the gateway's records were looked up (UTC, ISO)
    asked: str | None = None  # the follow-up's reference given, when it was one
    asked_is: str | None = None  # what that follow-up is: refund, capture, reverse, ...

    @property
    def followup_note(self) -> str | None:
        """``ORDER-1-REF1 is a refund of ORDER-1`` when a follow-up's reference was given."""
        if self.asked is None:
            return None
        what = f"a {self.asked_is}" if self.asked_is else "a follow-up"
        return f"{self.asked} is {what} of {self.reference}: the order's story follows."

    @property
    def disagreements(self) -> list[Finding]:
        """The open ones: a finding resolved in the history (recon resolve) is shown with
        its note, not named as a disagreement."""
        return [f for f in self.findings if f.kind in MISMATCHES and not f.resolved]

    @property
    def resolved(self) -> list[Finding]:
        return [f for f in self.findings if f.resolved]

    @property
    def exit_code(self) -> int:
        """13 when a disagreement is named (recon's rule), else 0."""
        return int(ExitCode.MISMATCH if self.disagreements else ExitCode.OK)

    @property
    def verdict(self) -> str:
        """One line: the history and the gateway agree, or each disagreement named."""
        ref = self.reference
        if self.backend == "none":
            return (f"No history ({self.history or 'none'} does not exist): the gateway's "
                    f"records only, nothing to compare them with.")
        named = self.disagreements
        if named:
            return (f"The history and the gateway disagree on {ref}: " + "; ".join(
                f"{f.reference} {LABELS[f.kind]}" for f in named) + ".")
        settled = "".join(f" (finding #{r.id} resolved by {r.resolved_by})"
                          for f in self.resolved if (r := f.recorded) is not None)
        if not self.entries:
            return (f"The history has no entry on {ref}; nothing at the gateway "
                    f"disagrees{settled}.")
        return f"The history and the gateway agree on {ref}{settled}."

    def timeline(self) -> list[Step]:
        """The history's entries, each with the record it was sent as, and the records no
        entry was sent as, in time order."""
        steps: list[Step] = []
        claimed: set[str] = set()
        for e in self.entries:
            # not sent as the record under its reference: refused before sending, or
            # refused by a 409 because another transaction holds that reference
            sent = e.outcome != "refused" and e.operation in OPERATIONS and not (
                e.outcome == "declined" and e.http_status == 409)
            record = find_record(self.records, e.reference) if sent else None
            if record is not None:
                claimed.add(record.client_system_transaction_id)
            steps.append(Step(e.time, e.operation, e.reference, e.amount, e.currency,
                              entry=e, record=record))
        for rec in self.records:
            if rec.client_system_transaction_id in claimed:
                continue
            shown = seen(rec)
            steps.append(Step(_utc(shown.time, self.zone),
                              _STEP_OF_KIND.get(kind_of(rec.type) or "", rec.type or "?"),
                              shown.reference, f"{shown.amount:f}", shown.currency, record=rec))
        return sorted(steps, key=lambda s: s.time)


def order_view(profile: Profile, client: GatewayClient, reference: str, *,
               keep: Callable[[HistoryStore, OrderView], None] | None = None) -> OrderView:
    """Everything known about ``reference``; ``keep``: called with the open history and the
    finished view (an evidence bundle is written from both)."""
    from walletctl.models.entries import now_utc

    named, backend, store = existing_history(profile, f"walletctl order {reference}")
    view = OrderView(reference=reference, profile=profile.name, history=named,
                     backend=backend if store is not None else "none", now=now_utc(),
                     zone=profile.timezone, merchant_id=profile.merchant_id,
                     store_id=profile.store_id)
    if store is None and keep is not None:
        raise ConfigError(f"--evidence: no history at {view.history}: a bundle is the "
                          "history's entries and their chain")
    try:
        asked = reference
        probed = _original_of(store, profile, client, view)
        reference = view.reference
        if store is not None:
            from walletctl.history.approvals import listing

            view.entries = [e for e in store.entries(Filters(original_ref=reference))
                            if ours(e, profile)]
            view.approvals = list(listing(store, now=view.now, original_ref=reference,
                                          merchant=(profile.merchant_id, profile.store_id)))
        view.fetched_at = now_utc()
        # an order unknown to the gateway is the lookup's own error, unless the history
        # records something on it (then it is a disagreement to name)
        if probed is not None:  # the reference given, looked up already: it is the order
            view.records = probed
        else:
            view.records = (lookup_or_none(client, reference) if view.entries
                            else client.lookup(reference))
        if view.asked is not None and (record := find_record(view.records, asked)):
            view.asked_is = _STEP_OF_KIND.get(kind_of(record.type) or "") or view.asked_is
        try:
            view.balance = balance_from_records(reference, view.records)
        except RefusedError as exc:
            view.balance_note = exc.message
        if store is not None:
            from walletctl.history.rulebook import unapproved_check
            from walletctl.ops.recon.on_file import with_files

            view.findings = with_files(store, profile, findings_on(
                reference, view.entries, view.records, unapproved_check(store)), record=False)
            if keep is not None:
                keep(store, view)
    finally:
        if store is not None:
            store.close()
    return view


def _original_of(store: HistoryStore | None, profile: Profile, client: GatewayClient,
                 view: OrderView) -> list[TransactionRecord] | None:
    """When ``view.reference`` is a follow-up's, make the view its original's (``asked``
    and ``asked_is`` name what was given). Returns the gateway's records of the reference
    given when they were looked up to tell (they are the order's own when it is no
    follow-up), else None."""
    given = view.reference
    if store is not None:  # an entry sent as it, or a finding on it, names its original
        for e in store.entries(Filters(ref=given)):
            if not ours(e, profile):
                continue
            if e.original_ref is None or e.original_ref == given:
                return None  # the history has it as an order of its own
            view.reference, view.asked = e.original_ref, given
            view.asked_is = e.operation if e.operation in OPERATIONS else None
            return None
    tagged = _TAGGED.fullmatch(given)
    if tagged is None:
        return None
    records = lookup_or_none(client, given)
    record = find_record(records, given)
    kind = kind_of(record.type) if record is not None else None
    if kind is None or kind not in OP_OF_KIND:  # not a follow-up at the gateway either
        return records or None
    view.reference, view.asked = tagged["original"], given
    view.asked_is = OP_OF_KIND[kind]
    return None


def findings_on(reference: str, entries: list[Entry], records: list[TransactionRecord],
                why: Callable[[Entry], str | None] | None = None) -> list[Finding]:
    """``recon --ref REF``'s comparison, with no window: every entry on the order is
    compared, so nothing at the gateway is explained by an entry outside it."""
    expected = [Expected(e, f"history #{e.id}") for e in entries
                if e.operation in OPERATIONS and e.outcome != "refused"]
    found = compare_original(reference, expected, records, in_window=lambda _rec: True,
                             recorded_elsewhere=set, operations=frozenset(OPERATIONS),
                             totals=Totals(), counts=Counts())
    if why is not None:  # what the desk's rulebook did not allow, the gateway agreeing or not
        found += unapproved(expected, why)
    return sorted(found, key=Finding.sort_key)


def _utc(text: str | None, zone: str | None) -> str:
    """A gateway date as the history's UTC form (as given when it cannot be read)."""
    from zoneinfo import ZoneInfo

    from walletctl.models.entries import utc_text
    from walletctl.models.records import parse_timestamp

    when = parse_timestamp(text, ZoneInfo(zone) if zone else UTC) if text else None
    return utc_text(when) if when is not None else text or ""
