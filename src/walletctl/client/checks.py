"""Answers checked against the request that caused them, and against plain sanity.

A 2xx answer to a money move that names another reference, amount, currency, operation or
original is not a success: it is an *unknown outcome* (exit 8) with a lookup hint, since the
only thing known is that the gateway answered something. Lookups with negative amounts are
refused as malformed (they would make the pre-flight allow more than remains).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from walletctl.errors import RequestValidationError, ResponseError, UnknownOutcomeError
from walletctl.models.money import AmountFormat, from_wire
from walletctl.models.records import TransactionRecord


def _folded(data: Any) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in data.items()} if isinstance(data, dict) else {}


def check_echo(
    data: Any,
    *,
    reference: str,
    amount: Decimal,
    currency: str,
    operation: str,
    fmt: AmountFormat,
    invoice: str | None = None,
) -> None:
    """Raise :class:`UnknownOutcomeError` when the answer's echoed fields contradict the
    request (absent fields are fine)."""
    got = _folded(data)
    found: list[str] = []

    def differs(key: str, wanted: str, shown: str, fold: bool = False) -> None:
        value = got.get(key.lower())
        if value is None:
            return
        text = str(value)
        if (text.lower() != wanted.lower()) if fold else (text != wanted):
            found.append(f"{shown} {text[:80]!r}, not {wanted!r}")

    differs("clientSystemTransactionId", reference, "clientSystemTransactionId")
    if invoice is not None:
        differs("clientSystemInvoiceId", invoice, "clientSystemInvoiceId")
    differs("currencyCode", currency, "currencyCode", fold=True)
    differs("type", operation, "type", fold=True)
    raw_amount = got.get("amount")
    if raw_amount is not None and currency:
        try:
            value = from_wire(raw_amount, currency, fmt)
        except (ValueError, ArithmeticError):
            found.append(f"amount {str(raw_amount)[:40]!r} is not an amount")
        else:
            if value != amount:
                found.append(f"amount {value}, not {amount}")
    if found:
        raise UnknownOutcomeError(
            reference, "the gateway's answer does not match the request: " + "; ".join(found[:3]))


def check_records(records: list[TransactionRecord]) -> list[TransactionRecord]:
    """Sanity of a lookup: no negative (or non-finite) amounts."""
    for n, record in enumerate(records):
        amount = record.transaction_amount
        if not amount.is_finite() or amount < 0:
            raise ResponseError(
                f"lookup response record [{n}]: transactionAmount: must be a non-negative "
                f"amount, got {str(amount)[:40]}",
                hint="the gateway's answer cannot be trusted: nothing was sent",
            )
    return records


def check_reference_field(value: str, field: str) -> str:
    """A merchant reference typed by the user (the one rule of models.fields), before it
    goes into a request or URL: a :class:`RequestValidationError` naming ``field``."""
    from walletctl.models.fields import check_reference

    try:
        return check_reference(value)
    except ValueError as exc:
        raise RequestValidationError([(field, str(exc))]) from None


def check_identifier(value: str, field: str, max_length: int = 255) -> str:
    """An id typed by the user (not a merchant reference: see :func:`check_reference_field`),
    before it goes into a URL (nothing sent yet)."""
    rule = None
    if not value.strip():
        rule = "must not be empty"
    elif len(value) > max_length:
        rule = f"must be at most {max_length} characters (got {len(value)})"
    elif any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        rule = "must not contain control characters (newline, tab, escape...)"
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            rule = "is not valid text (undecodable bytes in the argument?)"
    if rule is not None:
        raise RequestValidationError([(field, rule)])
    return value
