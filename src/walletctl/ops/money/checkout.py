"""A checkout through the money protocol: locked on its reference, an earlier unknown
checkout under the same reference (any profile or URL) resolved by lookup first, the intent
committed before the request leaves, one history entry per checkout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.history.recorder import recording
from walletctl.ops.money.earlier import Judged, lookup_or_none, settle, unresolved_for
from walletctl.ops.money.lock import hold_original, lock_key

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.history.store import HistoryStore
    from walletctl.models.checkout import CheckoutRequest, CheckoutResponse


@dataclass(frozen=True)
class Created:
    response: CheckoutResponse | None = None
    earlier: Judged | None = None  # an earlier run's checkout was created: nothing sent


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
        response = client.checkout(request)
        # created, not approved: the customer has yet to approve it behind the redirect URL
        rec.answered("Pending", outcome="created",
                     note="checkout created; waiting for the customer")
        return Created(response=response)
