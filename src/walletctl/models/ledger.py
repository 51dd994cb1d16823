"""Balances and the follow-up rules: ONE rule set for the CLI pre-flight, batch and sandbox.

Rules (docs/gateway-api.md, "Follow-up body"):
* only an ``Approved`` sale or pre-authorisation can be followed up;
* capture: only a pre-authorisation, not reversed; Σ captures ≤ authorised;
* refund: Σ refunds ≤ Σ captured (a sale counts as captured in full);
* reversal: only a pre-authorisation with nothing captured, for the full authorised amount;
* the currency must match the original's.
Only ``Approved`` follow-ups move money; ``Errored``/``Declined`` ones are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from walletctl.errors import RefusedError
from walletctl.models.money import format_major
from walletctl.models.operations import FOLLOW_UPS, KIND_OF_OP, OP_OF_KIND, LedgerKind, Op

__all__ = ["KIND_OF_OP", "Op"]  # re-exported: the follow-up rules speak of them

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

Kind = LedgerKind
APPROVED = "Approved"
ZERO = Decimal(0)

# (in lower case, with the American "preauthorization")
_TYPE_KINDS: dict[str, Kind] = {
    "ecom.sale": "sale",
    "ecom.preauthorization": "preauth",
    **{op.wire_type.lower(): op.kind for op in FOLLOW_UPS},
}


def kind_of(type_str: str | None) -> Kind | None:
    """A record's ``type`` (any spelling the gateway uses) -> ledger kind."""
    folded = (type_str or "").lower().replace("preauthorisation", "preauthorization")
    return _TYPE_KINDS.get(folded)


@dataclass(frozen=True)
class Entry:
    kind: Kind
    state: str
    amount: Decimal
    currency: str
    reference: str


@dataclass(frozen=True)
class Balance:
    reference: str
    kind: Literal["sale", "preauth"]
    state: str
    currency: str
    authorised: Decimal
    captured: Decimal
    refunded: Decimal
    reversed: bool = False

    @classmethod
    def of(cls, original: Entry, followups: Iterable[Entry] = ()) -> Balance:
        if original.kind not in ("sale", "preauth"):
            raise RefusedError(
                f"{original.reference} is a {original.kind}, not a sale or pre-authorisation",
                hint="follow-ups take the reference of the original checkout",
            )
        sale = original.kind == "sale"
        authorised = original.amount if original.state == APPROVED else ZERO
        bal = cls(reference=original.reference, kind="sale" if sale else "preauth",
                  state=original.state, currency=original.currency, authorised=authorised,
                  captured=authorised if sale else ZERO, refunded=ZERO)
        for entry in followups:
            op = OP_OF_KIND.get(entry.kind)
            if entry.state == APPROVED and op is not None:
                bal = bal.applied(op, entry.amount)
        return bal

    @property
    def capturable(self) -> Decimal:
        if self.kind != "preauth" or self.reversed or self.state != APPROVED:
            return ZERO
        return self.authorised - self.captured

    @property
    def refundable(self) -> Decimal:
        return self.captured - self.refunded

    def remaining(self, op: Op) -> Decimal:
        if op == "capture":
            return self.capturable
        if op == "refund":
            return self.refundable
        return self.authorised if self.kind == "preauth" and not self.captured else ZERO

    def applied(self, op: Op, amount: Decimal) -> Balance:
        """The balance after ``op`` of ``amount`` (no checks: see :func:`check_followup`)."""
        if op == "capture":
            return replace(self, captured=self.captured + amount)
        if op == "refund":
            return replace(self, refunded=self.refunded + amount)
        return replace(self, reversed=True)

    def summary(self) -> str:
        c = self.currency
        text = (
            f"authorised {format_major(self.authorised, c)}, captured "
            f"{format_major(self.captured, c)}, refunded {format_major(self.refunded, c)}"
        )
        return text + (", reversed" if self.reversed else "")


def check_followup(balance: Balance, op: Op, amount: Decimal | None = None,
                   currency: str | None = None) -> Decimal:
    """Return the amount to send (default: all that remains) or raise RefusedError."""
    ref, cur = balance.reference, balance.currency
    if currency is not None and currency.upper() != cur.upper():
        raise RefusedError(f"currency {currency.upper()} does not match {ref}'s currency {cur}")
    if balance.state != APPROVED:
        raise RefusedError(f"{ref} is {balance.state}, not Approved: nothing to {op}",
                           hint=f"check with `walletctl lookup {ref}`")
    if balance.reversed:
        raise RefusedError(f"{ref} was reversed: nothing left to {op}")
    if amount is not None and amount <= 0:
        raise RefusedError(f"amount must be greater than zero (got {amount})")
    if op == "reverse":
        _check_reversal(balance, amount)
        return balance.authorised
    _check_within(balance, op, amount)
    return balance.remaining(op) if amount is None else amount


def _check_within(balance: Balance, op: Op, amount: Decimal | None) -> None:
    """A capture (of a pre-authorisation) or a refund within what remains."""
    ref, left = balance.reference, balance.remaining(op)
    if op == "capture" and balance.kind != "preauth":
        raise RefusedError(f"{ref} is a sale: only a pre-authorisation can be captured")
    if left <= 0 and op == "capture":
        raise RefusedError(f"{ref} is fully captured ({balance.summary()})")
    if left <= 0:
        what = "nothing captured yet" if balance.captured == 0 else "already fully refunded"
        raise RefusedError(f"{ref} has nothing to refund: {what} ({balance.summary()})")
    if amount is not None and amount > left:
        room = ("the remaining authorised amount" if op == "capture"
                else "captured − refunded =")
        raise RefusedError(f"{op} of {format_major(amount, balance.currency)} exceeds {room} "
                           f"{format_major(left, balance.currency)} of {ref} "
                           f"({balance.summary()})")


def _check_reversal(balance: Balance, amount: Decimal | None) -> None:
    """A reversal: of a pre-authorisation with nothing captured, for all of it."""
    ref, cur = balance.reference, balance.currency
    if balance.kind != "preauth":
        raise RefusedError(f"{ref} is a sale: only a pre-authorisation can be reversed",
                           hint=f"refund it instead: `walletctl refund {ref}`")
    if balance.captured > 0:
        raise RefusedError(f"{ref} has captures ({balance.summary()}): a captured "
                           "pre-authorisation cannot be reversed",
                           hint=f"refund it instead: `walletctl refund {ref}`")
    if amount is not None and amount != balance.authorised:
        raise RefusedError(f"a reversal releases the whole pre-authorisation: amount must be "
                           f"{format_major(balance.authorised, cur)}, got "
                           f"{format_major(amount, cur)}")


def balance_from_records(reference: str, records: Sequence[TransactionRecord]) -> Balance:
    """The balance of ``reference`` from a lookup's records (the original + its follow-ups).

    The spec's lookup returns "one record per transaction sharing the reference, for example a
    pre-authorisation and a later capture", so a follow-up record may carry the original's
    own reference as its ``clientSystemTransactionId``: it counts as a follow-up.
    """
    original: Entry | None = None
    followups: list[Entry] = []
    own_followup: str | None = None  # a follow-up kind recorded under ``reference`` itself
    for rec in records:
        kind = kind_of(rec.type)
        if kind is None:
            continue
        entry = Entry(kind, rec.state, rec.transaction_amount, rec.currency_code.upper(),
                      rec.client_system_transaction_id)
        if rec.client_system_transaction_id == reference and kind in ("sale", "preauth"):
            original = entry
        elif rec.client_system_transaction_id == reference:
            own_followup = own_followup or kind
            followups.append(entry)
        elif rec.client_system_invoice_id in (None, reference):
            followups.append(entry)
    if original is None:
        if own_followup is not None:
            raise RefusedError(
                f"{reference} is a {own_followup}, not a sale or pre-authorisation",
                hint="follow-ups take the reference of the original checkout",
            )
        raise RefusedError(f"no sale or pre-authorisation with reference {reference} was found")
    return Balance.of(original, followups)
