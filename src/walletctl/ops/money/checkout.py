"""A checkout through the money protocol: locked on its reference, an earlier unknown
checkout under the same reference (any profile or URL) resolved by lookup first, the intent
committed before the request leaves, one history entry per checkout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.errors import GatewayError
from walletctl.history.recorder import recording
from walletctl.ops.money.earlier import Judged, resolve_earlier
from walletctl.ops.money.lock import lock_key, money_locks

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.history.store import HistoryStore
    from walletctl.models.checkout import CheckoutRequest, CheckoutResponse
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class Created:
    response: CheckoutResponse | None = None
    earlier: Judged | None = None  # an earlier run's checkout was created: nothing sent


def lookup_or_none(client: GatewayClient, reference: str) -> list[TransactionRecord]:
    """A lookup where an unknown reference (404) means "nothing under it"."""
    try:
        return client.lookup(reference)
    except GatewayError as exc:
        if exc.status != 404:
            raise
        return []


def create_checkout(client: GatewayClient, store: HistoryStore | None,
                    request: CheckoutRequest) -> Created:
    profile = client.profile
    ref = request.client_system_transaction_id
    with money_locks().hold(lock_key(profile.merchant_id, profile.store_id, ref), what=ref), \
            recording(store, profile, "checkout", ref) as rec:
        if store is not None and store.unresolved(
                merchant_id=profile.merchant_id, store_id=profile.store_id,
                operation="checkout", original_ref=ref, legacy=(profile.name, profile.base_url)):
            judged = resolve_earlier(store, profile, "checkout", ref, lookup_or_none(client, ref))
            for j in judged:
                if j.verdict == "conflict":
                    raise j.error()
            applied = [j for j in judged if j.verdict == "applied"]
            if applied:
                return Created(earlier=applied[-1])
        rec.planned(None, request.amount, request.currency_code)
        rec.sending()
        response = client.checkout(request)
        # created, not approved: the customer has yet to approve it behind the redirect URL
        rec.answered("Pending", outcome="created",
                     note="checkout created; waiting for the customer")
        return Created(response=response)
