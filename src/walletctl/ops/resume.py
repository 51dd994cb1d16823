"""Re-running a single command after an unknown outcome (never moves money twice).

Before a capture/refund/reverse/checkout is planned, the history (or the intent store when
the history is off) is asked for an earlier intent of the same operation on the same
reference whose outcome is still unknown. If there is one, the gateway is asked first:

* the earlier reference is there -> it was applied: the command reports it as done (exit 0
  when Approved) and sends nothing;
* it is not there -> it was not applied: the command re-sends under the *same* reference.

A genuinely new operation on the same original takes an explicit ``--new-ref``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from walletctl.errors import UsageError
from walletctl.history.recorder import now_utc, outcome_of_state
from walletctl.history.store import Completion, Entry, HistoryStore

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class Earlier:
    entry: Entry
    applied: TransactionRecord | None  # the gateway's record when it was applied


def pending_intent(
    store: HistoryStore | None, profile: Profile, operation: str, reference: str,
    new_ref: str | None,
) -> Entry | None:
    """The latest unresolved intent this command would repeat (None: nothing to resolve)."""
    if store is None:
        return None
    found = [
        e for e in store.unresolved(
            base_url=profile.base_url, operation=operation, original_ref=reference)
        if e.profile == profile.name and (new_ref is None or e.new_ref == new_ref)
    ]
    return found[-1] if found else None


def resolve_earlier(
    client: GatewayClient,
    store: HistoryStore | None,
    operation: str,
    reference: str,
    *,
    amount: str | None,
    new_ref: str | None,
) -> Earlier | None:
    """Resolve the earlier unknown intent by lookup and record what is found."""
    entry = pending_intent(store, client.profile, operation, reference, new_ref)
    if entry is None or store is None:
        return None
    if amount is not None and entry.amount is not None and not _same(amount, entry.amount):
        raise UsageError(
            f"an earlier {operation} on {reference} ({entry.new_ref}, {entry.amount} "
            f"{entry.currency}, history #{entry.id}) has an unknown outcome",
            hint="repeat that command to resolve it, run `walletctl history --unknown "
            "--reconcile`, or pass --new-ref to send a new one",
        )
    target = entry.new_ref or reference
    from walletctl.errors import GatewayError

    try:
        records = client.lookup(reference)
    except GatewayError as exc:
        if exc.status != 404:  # unknown reference: nothing under it was applied
            raise
        records = []
    applied = next((r for r in records if r.client_system_transaction_id == target), None)
    if applied is not None:
        note = f"resolved on re-run: {target} found at the gateway (state {applied.state})"
        store.complete(entry.id, Completion(
            time=now_utc(), outcome=outcome_of_state(applied.state, entry.operation),
            note=note))
    else:
        store.complete(entry.id, Completion(
            time=now_utc(), outcome="error",
            note=f"resolved on re-run: {target} not at the gateway; re-sent under it"))
    return Earlier(entry=entry, applied=applied)


def _same(given: str, recorded: str) -> bool:
    try:
        return Decimal(given.strip()) == Decimal(recorded)
    except (InvalidOperation, ValueError):
        return False


@dataclass(frozen=True)
class Reconciled:
    entry: Entry
    outcome: str  # what is now recorded ("unknown" when it could not be looked up)
    note: str


def reconcile(
    store: HistoryStore,
    entries: list[Entry],
    client_for: Callable[[Entry], GatewayClient | str],
) -> list[Reconciled]:
    """Look each unknown entry up at its gateway and record what actually happened.

    ``client_for`` gives the client of the entry's profile, or why there is none.
    """
    from walletctl.errors import GatewayError, WalletctlError

    done: list[Reconciled] = []
    for entry in entries:
        client = client_for(entry)
        if isinstance(client, str):
            done.append(Reconciled(entry, "unknown", client))
            continue
        target = entry.new_ref or entry.original_ref or ""
        try:
            records = client.lookup(entry.original_ref or target)
        except GatewayError as exc:
            if exc.status != 404:
                done.append(Reconciled(entry, "unknown", f"lookup failed: HTTP {exc.status}"))
                continue
            records = []
        except WalletctlError as exc:
            done.append(Reconciled(entry, "unknown", f"lookup failed: {type(exc).__name__}"))
            continue
        found = next((r for r in records if r.client_system_transaction_id == target), None)
        if found is None and entry.operation == "authorize":
            # the lookup is spec 2.5's (redirect wallet): absence proves nothing here
            outcome, note = "unknown", f"{target} not found by lookup; check at the gateway"
        elif found is None:
            outcome, note = "error", f"reconciled: {target} is not at the gateway (not applied)"
        else:
            outcome = outcome_of_state(found.state, entry.operation)
            note = f"reconciled: {target} found at the gateway, state {found.state}"
        if outcome != "unknown":
            store.complete(entry.id, Completion(time=now_utc(), outcome=outcome, note=note))
        done.append(Reconciled(entry, outcome, note))
    return done
