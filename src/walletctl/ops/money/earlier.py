"""Earlier intents whose outcome is unknown, judged against what the gateway shows (docs/money.md,
"An earlier outcome is accepted only when the record matches"): one judgement for a re-run, a
batch row and ``history --unknown --reconcile`` — ``applied``, ``conflict`` or ``absent``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Literal

from walletctl.errors import (
    ConflictError,
    DeclinedError,
    GatewayError,
    UnknownOutcomeError,
    WalletctlError,
)
from walletctl.history.store import Completion, Entry, HistoryStore
from walletctl.models.entries import now_utc
from walletctl.models.outcome import (
    Intended,
    conflict_note,
    describe_record,
    find_record,
    history_outcome,
    record_conflicts,
)
from walletctl.models.records import parse_timestamp

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.recorder import Recording
    from walletctl.models.records import TransactionRecord

Verdict = Literal["applied", "absent", "conflict", "unknown"]


@dataclass(frozen=True)
class Judged:
    entry: Entry
    verdict: Verdict
    record: TransactionRecord | None = None
    conflicts: list[str] = field(default_factory=list)

    @property
    def note(self) -> str:
        ref = self.entry.reference
        if self.verdict == "applied" and self.record is not None:
            return f"{ref} found at the gateway, state {self.record.state}"
        if self.verdict == "absent":
            return f"{ref} is not at the gateway (not applied)"
        if self.verdict == "conflict" and self.record is not None:
            return conflict_note(intended_of(self.entry), self.record, self.conflicts)
        return f"{ref} not found by lookup; check at the gateway"

    @property
    def outcome(self) -> str:
        """What the history records. A conflict proves the intent was NOT applied under its
        reference (another transaction holds it): so it never blocks later movements on
        the original; only an unknown stays unknown."""
        if self.verdict == "applied" and self.record is not None:
            return history_outcome(self.record.state, self.entry.operation)
        return "error" if self.verdict in ("absent", "conflict") else "unknown"

    def error(self) -> ConflictError:
        e = self.entry
        return ConflictError(
            f"{self.note} (history #{e.id}, {e.who}, profile {e.profile}); "
            "nothing was sent",
            reference=e.reference,
            hint=f"compare with `walletctl lookup {e.original_ref or e.reference}` and settle "
                 "it with the gateway before moving money on this original again")


def _decimal(text: str | None) -> Decimal | None:
    try:
        return None if text is None else Decimal(text)
    except (InvalidOperation, ValueError):
        return None


def intended_of(entry: Entry) -> Intended:
    return Intended(entry.reference, entry.operation, _decimal(entry.amount), entry.currency)


def verdict_of(intended: Intended, records: list[TransactionRecord],
               ) -> tuple[Verdict, TransactionRecord | None, list[str]]:
    """The one rule: what ``records`` (a lookup of the original) prove about an intent."""
    found = find_record(records, intended.reference)
    if found is None:
        return ("unknown" if intended.operation == "authorize" else "absent"), None, []
    conflicts = record_conflicts(found, intended)
    return ("conflict" if conflicts else "applied"), found, conflicts


def judge(entry: Entry, records: list[TransactionRecord]) -> Judged:
    """What ``records`` (a lookup of the entry's original) prove about the entry."""
    verdict, found, conflicts = verdict_of(intended_of(entry), records)
    return Judged(entry, verdict, found, conflicts)


def taken(client: GatewayClient, intended: Intended, original_ref: str,
          rec: Recording) -> TransactionRecord:
    """The gateway answered 409 (the reference is used): one lookup, judged by
    :func:`verdict_of`, says by what — this very intent (its record returned), another
    transaction (DeclinedError, recorded declined) or nothing known (UnknownOutcomeError)."""
    ref = intended.reference
    try:
        verdict, record, conflicts = verdict_of(intended, lookup_or_none(client, ref))
    except WalletctlError:
        verdict, record, conflicts = "unknown", None, []
    if verdict == "applied" and record is not None:
        rec.answered(record.state, http_status=409,
                     outcome=history_outcome(record.state, intended.operation),
                     note=f"409, already there: {ref} found at the gateway, state "
                          f"{record.state}; nothing new was applied")
        return record
    if verdict == "conflict" and record is not None:
        rec.answered(record.state, http_status=409, outcome="declined")
        raise DeclinedError(
            f"the gateway refused {intended.describe()}: the reference is already used by "
            f"{describe_record(record)}, which is not this {intended.operation} "
            f"({'; '.join(conflicts)}); nothing was applied under it",
            hint=f"a new {intended.operation} needs a reference of its own (see `walletctl "
                 f"lookup {ref}`); {original_ref} is unchanged")
    seen = f"a lookup of {ref} does not show it" if verdict == "absent" else "no lookup answer"
    err = UnknownOutcomeError(ref, f"the gateway answered HTTP 409: {ref} is already used; "
                                   f"{seen}")
    err.hint = (f"the outcome is recorded unknown: run the same command again (it looks {ref} "
                "up first and records what it finds; nothing is sent twice) or "
                "`walletctl history --unknown --reconcile`")
    raise err


def record_judgement(store: HistoryStore, judged: Judged, how: str) -> None:
    store.complete(judged.entry.id, Completion(time=now_utc(), outcome=judged.outcome,
                                               note=f"{how}: {judged.note}"))


def unresolved_for(store: HistoryStore | None, profile: Profile, operation: str,
                   original_ref: str, batch_id: str | None = None) -> list[Entry]:
    """Unknown intents on this original at this merchant, from any profile or URL (a
    batch's own rows excluded: its journal resolves them)."""
    if store is None:
        return []
    return [e for e in store.unresolved(
        merchant_id=profile.merchant_id, store_id=profile.store_id, operation=operation,
        original_ref=original_ref, legacy=(profile.name, profile.base_url))
        if batch_id is None or e.batch_id != batch_id]


def resolve_earlier(store: HistoryStore | None, profile: Profile, operation: str,
                    original_ref: str, records: list[TransactionRecord],
                    batch_id: str | None = None) -> list[Judged]:
    """Judge and record every unknown earlier intent on the original (one lookup's records);
    the judgements, oldest first."""
    return settle(store, unresolved_for(store, profile, operation, original_ref, batch_id),
                  records)


def settle(store: HistoryStore | None, entries: list[Entry],
           records: list[TransactionRecord]) -> list[Judged]:
    """Judge ``entries`` against ``records`` and record what is proven."""
    judged = [judge(e, records) for e in entries]
    for j in judged:
        if store is not None and j.verdict != "unknown":
            record_judgement(store, j, "resolved on re-run")
    return judged


def lookup_or_none(client: GatewayClient, reference: str) -> list[TransactionRecord]:
    """A lookup where an unknown reference (404) means "nothing under it"."""
    try:
        return client.lookup(reference)
    except GatewayError as exc:
        if exc.status != 404:
            raise
        return []


@dataclass(frozen=True)
class Reconciled:
    entry: Entry
    outcome: str  # what is now recorded ("unknown" when it could not be looked up)
    note: str


def reconcile(store: HistoryStore, entries: list[Entry],
              client_for: Callable[[Entry], GatewayClient | str]) -> list[Reconciled]:
    """``history --unknown --reconcile``: look each entry's original up at its gateway and
    record what the judgement proves. ``client_for`` gives a client for the entry's
    merchant, or why there is none."""
    done: list[Reconciled] = []
    for entry in entries:
        client = client_for(entry)
        if isinstance(client, str):
            done.append(Reconciled(entry, "unknown", client))
            continue
        try:
            records = lookup_or_none(client, entry.original_ref or entry.reference)
        except WalletctlError as exc:
            why = f"HTTP {exc.status}" if isinstance(exc, GatewayError) else type(exc).__name__
            done.append(Reconciled(entry, "unknown", f"lookup failed: {why}"))
            continue
        judged = judge(entry, records)
        wait = in_flight_for(entry, client.profile.timeout) if judged.verdict == "absent" else 0
        if wait:
            done.append(Reconciled(entry, "unknown", f"{entry.reference} is not at the gateway "
                                   f"yet, but a request begun then may still arrive: "
                                   f"reconcile again in {wait} s"))
            continue
        if judged.verdict != "unknown":
            record_judgement(store, judged, "reconciled")
        done.append(Reconciled(entry, judged.outcome, f"reconciled: {judged.note}"))
    return done


IN_FLIGHT_MARGIN = 60  # seconds a gateway may still apply a request after the client's deadline


def in_flight_for(entry: Entry, timeout: float) -> int:
    """Seconds for which ``entry``'s request may still reach the gateway and be applied (0:
    no longer). Its begin is committed just before the request leaves; the client waits at
    most ``timeout``, and a gateway may still be working on it for a while after the client
    is gone (killed, or timed out). Until then, a lookup that does not show it proves
    nothing."""
    began = parse_timestamp(entry.time) if entry.time else None  # the history's utc_text
    if began is None:
        return 0
    left = began + timedelta(seconds=timeout + IN_FLIGHT_MARGIN) - datetime.now(UTC)
    return max(0, math.ceil(left.total_seconds()))


def needs_lookup(store: HistoryStore | None, original_ref: str, operation: str, *,
                 batch_id: str, since: str) -> bool:
    """Whether the history holds, from outside this batch, a movement on the original sent
    before or begun since ``since`` (the row then takes the lookup path); one probe."""
    if store is None:
        return False
    return store.touched(operation=operation, original_ref=original_ref, batch_id=batch_id,
                         since=since)
