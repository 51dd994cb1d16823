"""The result of ``walletctl checkout``: on a terminal a sentence on stderr and the redirect
URL alone on stdout (for ``$(...)``); one row in the data formats. A checkout the gateway
replayed (an identical one already existed) says so instead of "created", with its state
now, and prints its URL only while it still waits for the customer."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from walletctl.models.money import format_major, quantize
from walletctl.render.console import print_note
from walletctl.render.fit import fit_phrases
from walletctl.render.formats import View, show

if TYPE_CHECKING:
    from walletctl.models.checkout import CheckoutRequest
    from walletctl.ops.money.movements import Created
    from walletctl.ops.money.pipeline import Moved

WAITING = "Pending"  # the one state whose redirect URL still leads somewhere


def render_checkout(fmt: str, request: CheckoutRequest, created: Created, *,
                    tag: str = "") -> None:
    response = created.response
    ref = request.client_system_transaction_id
    row: dict[str, Any] = {
        "clientSystemTransactionId": ref,
        "type": request.type,
        "amount": format(quantize(request.amount, request.currency_code), "f"),
        "currencyCode": request.currency_code,
        "redirectUrl": response.redirect_url,
    }
    if created.replayed:
        row |= {"replayed": True, "state": created.state}
    show(View(rows=[row], document=row, table=lambda: _created(request, created, tag)), fmt)


def _created(request: CheckoutRequest, created: Created, tag: str) -> None:
    """A sentence on stderr, the redirect URL alone on stdout (while it leads somewhere)."""
    ref = request.client_system_transaction_id
    kind = "pre-authorisation" if request.is_preauth else "sale"
    money = format_major(request.amount, request.currency_code)
    waits = not created.replayed or created.state == WAITING
    if not created.replayed:
        phrases = [f"{tag}Checkout {ref} created", f"({money}, {kind}).", "Send the customer to:"]
    else:
        state = created.state or "unknown (the lookup failed)"
        phrases = [f"{tag}Checkout {ref} already existed", f"({money}, {kind}):",
                   "the gateway replayed its answer; nothing new was created.", f"State: {state}.",
                   "It still waits for the customer at:" if waits
                   else f"See `walletctl lookup {ref}`."]
    sys.stderr.write(fit_phrases(phrases, indent="") + "\n")
    if waits:
        sys.stdout.write(created.response.redirect_url + "\n")


def render_existing(fmt: str, ref: str, moved: Moved[Any, Any]) -> None:
    """The checkout was there before this command: an earlier run's whose outcome was
    unknown, or one the gateway's 409 and lookup showed to be this very checkout. The data
    formats get a row too (no ``redirectUrl``: it was not received)."""
    record = moved.found or (moved.earlier.record if moved.earlier else None)
    state = record.state if record is not None else "unknown"
    row: dict[str, Any] = {
        "clientSystemTransactionId": ref, "alreadyCreated": True, "state": state,
        "redirectUrl": None, "historyEntry": moved.earlier.entry.id if moved.earlier else None}
    if record is not None:
        row |= {"type": record.type, "amount": format(record.transaction_amount, "f"),
                "currencyCode": record.currency_code}
    show(View(rows=[row], document=row, table=lambda: None), fmt)  # a table: the note alone
    how = (f"by an earlier run whose outcome was unknown (history #{moved.earlier.entry.id}"
           f"; state {state}); nothing was sent" if moved.earlier is not None else
           f"(state {state}): the gateway answered 409 (reference used) and a lookup shows "
           "this very checkout; nothing new was created")
    print_note(f"checkout {ref} was already created {how}. Its redirect URL was not "
               f"received: see `walletctl lookup {ref}`")
