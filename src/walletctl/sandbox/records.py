"""The 2.5 transaction details records the sandbox answers, built from stored rows.

Payer fields are always present (null when the record has none, as on ``Errored`` records);
the record type is spelled as in the spec's sample (:data:`RECORD_TYPES`).
"""

from __future__ import annotations

from typing import Any, Final

from walletctl.models.money import AmountFormat
from walletctl.sandbox.store import TxRow

__all__ = ["RECORD_TYPES", "record_body"]

# How records spell their type (the spec's sample shows ``ecom.preAuthorisation``).
RECORD_TYPES: Final = {
    "sale": "ecom.sale",
    "preauth": "ecom.preAuthorisation",
    "capture": "ecom.capture",
    "refund": "ecom.refund",
    "reversal": "ecom.reversalPreauthorization",
}


def record_body(row: TxRow, fmt: AmountFormat) -> dict[str, Any]:
    """One 2.5 transaction details record (payer fields null when there are none)."""
    from walletctl.models.records import (
        ApmRecordDetails,
        RecordAddress,
        TransactionRecord,
        format_timestamp,
    )

    payer = _strings(row.payer)
    rec = TransactionRecord(
        id=row.id,
        state=row.state,
        currency_code=row.currency,
        transaction_amount=row.amount,
        client_system_transaction_id=row.reference,
        client_system_invoice_id=row.invoice_reference,
        type=RECORD_TYPES.get(row.kind, row.type_str),
        transaction_date_time=format_timestamp(row.created_at),
        provider_state_code=row.provider_state_code,
        apm_details=ApmRecordDetails.model_validate({"apmName": row.method, **payer}),
        billing_address=RecordAddress.model_validate(_strings(row.billing))
        if row.billing
        else None,
        shipping_address=(
            RecordAddress.model_validate(_strings(row.shipping))
            if row.shipping and row.kind == "preauth"
            else None
        ),
    )
    body = rec.to_wire(fmt)
    apm = body.setdefault("apmDetails", {})
    for field in ApmRecordDetails.model_fields.values():  # every payer field, null or not
        apm.setdefault(str(field.alias), None)
    return body


def _strings(data: dict[str, Any] | None) -> dict[str, Any]:
    """Stored free-form values (e.g. from the browser-wallet module) as strings or null."""
    return {str(k): (None if v is None else str(v)) for k, v in (data or {}).items()
            if not isinstance(v, dict | list)}
