"""Transaction details records (spec 2.5): what lookup returns, one per transaction.

Parsing is lenient in the ways the spec's samples are (``apmdetails``, ``apmProviderName``
vs ``apmProvider``, 7-digit fractions with no zone, null payer fields on ``Errored``
records) and strict where walletctl relies on a value (state, amount, currency).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

from pydantic import Field

from walletctl.errors import RequestValidationError, ResponseError
from walletctl.models.base import ResponseModel
from walletctl.models.fields import Currency
from walletctl.models.money import AmountFormat

_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$")


class ApmRecordDetails(ResponseModel):
    _variants: ClassVar[dict[str, str]] = {
        "apmprovidername": "apmName",
        "apmprovider": "apmName",
    }

    apm_name: str | None = None
    apm_payer_account_number: str | None = None
    apm_payer_email_address: str | None = None
    apm_provider_transaction_id: str | None = None
    apm_payer_shipping_name: str | None = None
    apm_payer_shipping_street1: str | None = None
    apm_payer_shipping_city_name: str | None = None
    apm_payer_shipping_postal_code: str | None = None
    apm_payer_shipping_country: str | None = None
    apm_payer_shipping_phone: str | None = None
    apm_payer_id: str | None = Field(default=None, alias="apmPayerID")
    apm_payer_firstname: str | None = None
    apm_payer_lastname: str | None = None
    apm_payer_billing_name: str | None = None
    apm_payer_billing_street1: str | None = None
    apm_payer_billing_city_name: str | None = None
    apm_payer_billing_country: str | None = None
    apm_payer_billing_phone: str | None = None
    apm_payer_billing_postal_code: str | None = None
    apm_payer_country_code: str | None = None
    apm_payer_state_or_province: str | None = None


class RecordAddress(ResponseModel):
    first_name: str | None = None
    last_name: str | None = None
    telephone_number: str | None = None
    email: str | None = None
    house_number: str | None = None
    street: str | None = None
    city: str | None = None
    zip_postal_code: str | None = None
    state: str | None = None
    country_code: str | None = None


class TransactionRecord(ResponseModel):
    id: str | None = None
    state: str
    # Validated: the amount's exponent comes from it (an unknown code would leave a minor-unit
    # amount undecoded and read it as major units).
    currency_code: Currency
    transaction_amount: Decimal
    client_system_transaction_id: str
    # Not in the spec's table; the sandbox adds it so a follow-up names its original.
    client_system_invoice_id: str | None = None
    type: str | None = None
    transaction_date_time: str | None = None
    provider_state_code: str | None = None
    apm_details: ApmRecordDetails | None = None
    billing_address: RecordAddress | None = None
    shipping_address: RecordAddress | None = None

    @property
    def timestamp(self) -> datetime | None:
        return parse_timestamp(self.transaction_date_time) if self.transaction_date_time else None


def parse_timestamp(text: str, default_tz: Any = UTC) -> datetime | None:
    """``2024-05-01T10:20:30.1234567`` (7 digits, no zone) -> aware datetime (µs precision)."""
    match = _TS.match(text.strip())
    if not match:
        return None
    base, frac, zone = match.groups()
    micro = (frac or "0")[:6].ljust(6, "0")
    iso = f"{base}.{micro}" + ("+00:00" if zone == "Z" else (zone or ""))
    try:
        value = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=default_tz)


def format_timestamp(value: datetime) -> str:
    """An aware datetime -> the spec's form: UTC, 7 fractional digits, no zone."""
    utc = value.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}0"


def parse_records(data: Any, fmt: AmountFormat) -> list[TransactionRecord]:
    """The lookup response (a JSON array; a single object is accepted) -> records."""
    items = data if isinstance(data, list) else [data] if isinstance(data, dict) else None
    if items is None:
        raise ResponseError("lookup response is not a JSON array of transaction records")
    records: list[TransactionRecord] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise ResponseError(f"lookup response record [{n}] is not an object")
        try:
            records.append(TransactionRecord.from_wire(item, fmt))
        except RequestValidationError as exc:
            field, rule = exc.problems[0]
            raise ResponseError(f"lookup response record [{n}]: {field}: {rule}") from None
    return records
