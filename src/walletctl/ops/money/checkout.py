"""A checkout through the money protocol: locked on its reference, an earlier unknown
checkout under the same reference (any profile or URL) resolved by lookup first, the intent
committed before the request leaves, one history entry per checkout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.errors import GatewayError
from walletctl.history.recorder import recording
from walletctl.models.outcome import Intended
from walletctl.ops.money.earlier import Judged, lookup_or_none, settle, taken, unresolved_for
from walletctl.ops.money.lock import hold_original, lock_key

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.history.store import HistoryStore
    from walletctl.models.checkout import CheckoutRequest, CheckoutResponse
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class Created:
    response: CheckoutResponse | None = None
    earlier: Judged | None = None  # an earlier run's checkout was created: nothing sent
    # the gateway replayed an identical checkout's stored answer: it already existed
    replayed: bool = False
    state: str | None = None  # a replayed checkout's state now (None: lookup failed)
    # the gateway answered 409 and its lookup shows this very checkout: nothing new created
    found: TransactionRecord | None = None


def create_checkout(client: GatewayClient, store: HistoryStore | None,
                    request: CheckoutRequest) -> Created:
    profile = client.profile
    ref = request.client_system_transaction_id
    with hold_original(store, lock_key(profile.merchant_id, profile.store_id, ref), what=ref), \
            recording(store, profile, "checkout", ref) as rec:
        pending = unresolved_for(store, profile, "checkout", ref)
        if pending:  # looked up only when there is something to resolve
            judged = settle(store, pending, lookup_or_none(client, ref))
            for j in judged:
                if j.verdict == "conflict":
                    raise j.error()
            applied = [j for j in judged if j.verdict == "applied"]
            if applied:
                return Created(earlier=applied[-1])
        rec.planned(None, request.amount, request.currency_code)
        rec.sending()
        try:
            response = client.checkout(request)
        except GatewayError as exc:
            if exc.status != 409:
                raise
            intended = Intended(ref, "checkout", request.amount, request.currency_code)
            return Created(found=taken(client, intended, ref, rec))
        if response.replayed:
            state = _state_now(client, ref)
            rec.answered("Pending", outcome="created", note="checkout already existed "
                         f"(answer replayed); state {state or 'unknown'}")
            return Created(response=response, replayed=True, state=state)
        # created, not approved: the customer has yet to approve it behind the redirect URL
        rec.answered("Pending", outcome="created",
                     note="checkout created; waiting for the customer")
        return Created(response=response)


def _state_now(client: GatewayClient, ref: str) -> str | None:
    """A replayed checkout's latest state by one lookup; None when it cannot be told."""
    from walletctl.errors import WalletctlError

    try:
        records = lookup_or_none(client, ref)
    except WalletctlError:  # the checkout stands; only its state is not known
        return None
    return records[-1].state if records else None
