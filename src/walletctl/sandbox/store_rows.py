"""The sandbox store's row types and value conventions (what its methods take and return).

Kinds, states and methods of stored transactions; :class:`TxRow` (one transaction, amounts in
Decimal MAJOR units), :class:`ApiKeyRow`, the browser-wallet rows; :class:`DuplicateReferenceError`;
and how values are stored: times as UTC ISO 8601 text, dicts as compact sorted JSON.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final, Literal

Kind = Literal["sale", "preauth", "capture", "refund", "reversal"]
KINDS: Final = ("sale", "preauth", "capture", "refund", "reversal")
ORIGINAL_KINDS: Final = ("sale", "preauth")
STATES: Final = ("Pending", "Approved", "Errored", "Declined", "Cancelled", "Expired")
METHODS: Final = ("WalletV2", "WalletPay")


class DuplicateReferenceError(Exception):
    """``(merchant_id, store_id, reference)`` is already stored."""

    def __init__(self, reference: str) -> None:
        super().__init__(f"clientSystemTransactionId {reference!r} is already used")
        self.reference = reference


@dataclass(frozen=True)
class TxRow:
    """One stored transaction (original or follow-up). Amounts are Decimal MAJOR units."""

    id: str
    merchant_id: str
    store_id: str
    reference: str
    invoice_reference: str | None
    kind: str
    type_str: str
    amount: Decimal
    currency: str
    state: str
    provider_state_code: str | None
    method: str
    created_at: datetime
    updated_at: datetime
    billing: dict[str, Any] | None = None
    shipping: dict[str, Any] | None = None
    payer: dict[str, Any] | None = None
    checkout: dict[str, Any] | None = None
    token: str | None = None
    token_used: bool = False
    expires_at: datetime | None = None
    provider_transaction_id: str | None = None
    request_hash: str | None = None
    response: dict[str, Any] | None = field(default=None, repr=False)
    response_status: int | None = None

    @property
    def is_original(self) -> bool:
        return self.kind in ORIGINAL_KINDS

    def ledger_json(self) -> dict[str, Any]:
        """The ``GET /_sandbox/ledger`` view of this row (amount as a decimal string)."""
        return {
            "id": self.id,
            "merchantId": self.merchant_id,
            "storeId": self.store_id,
            "reference": self.reference,
            "invoiceReference": self.invoice_reference,
            "kind": self.kind,
            "type": self.type_str,
            "amount": f"{self.amount:f}",
            "currency": self.currency,
            "state": self.state,
            "providerStateCode": self.provider_state_code,
            "method": self.method,
            "createdAt": iso_utc(self.created_at),
            "updatedAt": iso_utc(self.updated_at),
        }


@dataclass(frozen=True)
class ApiKeyRow:
    key: str
    merchant_id: str
    store_id: str
    expires_at: datetime | None
    created_at: datetime
    extra: dict[str, Any]


@dataclass(frozen=True)
class WalletPayKeyRow:
    """A browser-wallet key pair; ``private_pem`` is a sandbox test key (never print it)."""

    key_id: str
    private_pem: str = field(repr=False)
    merchant_id: str | None
    store_id: str | None


@dataclass(frozen=True)
class WalletPayRow:
    """A payment account or a 3DS result: its owner ids, JSON ``data`` and the used flag."""

    id: str
    parent_id: str  # the account's key id / the 3DS result's account id
    data: dict[str, Any] = field(repr=False)
    used: bool
    merchant_id: str | None = None
    store_id: str | None = None


def iso_utc(value: datetime) -> str:
    """How times are stored: ISO 8601 in UTC."""
    return value.astimezone(UTC).isoformat()


def parse_dt(value: str | None) -> datetime | None:
    """A stored time back (naive text is read as UTC)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def dump_json(value: Any) -> str | None:
    """How dicts are stored: compact JSON with sorted keys (None stays NULL)."""
    if value is None:
        return None
    return json.dumps(value, default=str, separators=(",", ":"), sort_keys=True)


def new_id(prefix: str = "") -> str:
    return f"{prefix}{uuid.uuid4().hex}"

