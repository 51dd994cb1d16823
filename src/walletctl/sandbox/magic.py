"""The sandbox's magic test amounts: the provider outcome chosen by the checkout amount.

Magic test values
-----------------
The outcome at the provider is chosen by the LAST TWO DIGITS OF THE CHECKOUT AMOUNT IN
MINOR UNITS (EUR 12.01 -> ``01``; JPY 1201 -> ``01``):

====  ===================================================================================
 01   declined by the provider: approving gives state ``Declined``
      (``DeclinedByProvider``) and the page redirects to ``refusedUrl``
 02   approved, but the provider refuses every capture: the capture is stored as an
      ``Errored`` record (``RefusedByProvider``, null payer fields) and answered 422
 03   stays pending at the provider: approving leaves ``Pending``
      (``PendingAtProvider``), redirect to ``pendingUrl``; follow-ups are refused
 04   errors at the provider: approving gives an ``Errored`` record with null payer
      fields (``ErrorAtProvider``), redirect to ``errorUrl``
 05   approved, but the provider refuses every refund (stored ``Errored``, answered 422)
====  ===================================================================================

Any other amount is approved normally (``CapturedByProvider`` for a sale,
``AuthorizedByProvider`` for a pre-authorisation).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from walletctl.models.money import exponent

__all__ = ["MAGIC", "MAGIC_HELP", "magic_of", "minor_units"]

MAGIC: Final[dict[int, str]] = {
    1: "decline",
    2: "capture-refused",
    3: "pending",
    4: "errored",
    5: "refund-refused",
}
MAGIC_HELP: Final[dict[str, str]] = {
    "01": "declined by the provider on approval (state Declined, redirect to refusedUrl)",
    "02": "approved, then every capture is refused by the provider (Errored record, HTTP 422)",
    "03": "stays pending at the provider (state Pending, redirect to pendingUrl)",
    "04": "errors at the provider on approval (Errored record, null payer fields, errorUrl)",
    "05": "approved, then every refund is refused by the provider (Errored record, HTTP 422)",
}


def magic_of(amount: Decimal, currency: str) -> str | None:
    """The provider outcome chosen by the amount's last two minor-unit digits."""
    return MAGIC.get(minor_units(amount, currency) % 100)


def minor_units(amount: Decimal, currency: str) -> int:
    """``amount`` in minor units of ``currency`` (EUR 12.01 -> 1201)."""
    return int(amount.scaleb(exponent(currency)).to_integral_value())
