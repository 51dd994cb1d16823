"""Spec 2.5 records in every spelling the samples show, timestamps, and the follow-up ledger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletctl.errors import RefusedError, ResponseError
from walletctl.models.base import loads
from walletctl.models.ledger import Balance, Entry, balance_from_records, check_followup, kind_of
from walletctl.models.records import format_timestamp, parse_records, parse_timestamp

PAYER = {
    "apmPayerAccountNumber": "WV2-1", "apmPayerEmailAddress": "p@x.example",
    "apmProviderTransactionId": "PRV-1", "apmPayerShippingName": "A B",
    "apmPayerShippingStreet1": "Main 1", "apmPayerShippingCityName": "Berlin",
    "apmPayerShippingPostalCode": "10115", "apmPayerShippingCountry": "DE",
    "apmPayerShippingPhone": "49-1", "apmPayerID": "PAYER-1", "apmPayerFirstname": "A",
    "apmPayerLastname": "B", "apmPayerBillingName": "A B", "apmPayerBillingStreet1": "Main 1",
    "apmPayerBillingCityName": "Berlin", "apmPayerBillingCountry": "DE",
    "apmPayerBillingPhone": "49-1", "apmPayerBillingPostalCode": "10115",
    "apmPayerCountryCode": "DE", "apmPayerStateOrProvince": "BY",
}

# The shape of the spec's lookup sample: lower-case ``apmdetails``, 7-digit fraction, no zone,
# British type spelling, a number amount, an Errored capture with null payer fields.
SAMPLE = """[
 {"id": "a1", "state": "Approved", "currencyCode": "EUR", "transactionAmount": 1234,
  "clientSystemTransactionId": "ORDER-1", "type": "ecom.preAuthorisation",
  "transactionDateTime": "2024-05-01T10:20:30.1234567",
  "apmdetails": {"apmName": "WalletV2", "apmPayerAccountNumber": "WV2-1", "apmPayerID": "P-1"},
  "billingAddress": {"houseNumber": "1", "street": "Main", "city": "Berlin",
                     "zipPostalCode": "10115", "state": "DE-BE", "countryCode": "DEU"},
  "shippingAddress": {"firstName": "A", "lastName": "B", "countryCode": "DEU"}},
 {"Id": "a2", "State": "Errored", "CurrencyCode": "EUR", "TransactionAmount": "500",
  "ClientSystemTransactionId": "ORDER-1-CAP1", "Type": "ecom.capture",
  "TransactionDateTime": "2024-05-01T11:00:00.0000001",
  "ApmDetails": {"apmName": "WalletV2", "apmPayerAccountNumber": null,
                 "apmProviderTransactionId": null, "apmPayerEmailAddress": null}}
]"""


def test_spec_sample_records_parse_minor() -> None:
    records = parse_records(loads(SAMPLE), "minor")
    assert [r.client_system_transaction_id for r in records] == ["ORDER-1", "ORDER-1-CAP1"]
    first, second = records
    assert first.transaction_amount == Decimal("12.34"), first.transaction_amount
    assert second.transaction_amount == Decimal("5.00"), second.transaction_amount
    assert first.apm_details is not None
    assert first.apm_details.apm_payer_id == "P-1"
    assert first.billing_address is not None
    assert first.billing_address.state == "DE-BE"
    assert second.state == "Errored"
    assert second.apm_details is not None
    assert second.apm_details.apm_provider_transaction_id is None
    assert kind_of(first.type) == "preauth", first.type
    assert first.timestamp == datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=UTC)


def test_records_decimal_format_and_number_amounts() -> None:
    data = loads('[{"state": "Approved", "currencyCode": "BHD", "transactionAmount": 1.234,'
                 ' "clientSystemTransactionId": "R"}]')
    assert parse_records(data, "decimal")[0].transaction_amount == Decimal("1.234")
    data = loads('[{"state": "Approved", "currencyCode": "JPY", "transactionAmount": "1500",'
                 ' "clientSystemTransactionId": "R"}]')
    assert parse_records(data, "minor")[0].transaction_amount == Decimal("1500")
    assert parse_records(data, "decimal")[0].transaction_amount == Decimal("1500")


def test_full_payer_fields_and_provider_name_variants() -> None:
    for key in ("apmName", "apmProviderName", "apmProvider"):
        rec = {"state": "Approved", "currencyCode": "EUR", "transactionAmount": "100",
               "clientSystemTransactionId": "R", "apmDetails": {key: "WalletV2", **PAYER}}
        (parsed,) = parse_records([rec], "minor")
        assert parsed.apm_details is not None
        assert parsed.apm_details.apm_name == "WalletV2", (key, parsed.apm_details)
        dumped = parsed.apm_details.model_dump(by_alias=True)
        for name, value in PAYER.items():
            assert dumped[name] == value, (name, dumped)


def test_single_object_is_accepted() -> None:
    rec = {"state": "Approved", "currencyCode": "EUR", "transactionAmount": "1",
           "clientSystemTransactionId": "R"}
    assert len(parse_records(rec, "minor")) == 1


@pytest.mark.parametrize(
    ("data", "needle"),
    [("nope", "not a JSON array"), (None, "not a JSON array"), ([1], "[0] is not an object"),
     ([{"state": "Approved", "currencyCode": "EUR", "clientSystemTransactionId": "R"}],
      "transactionAmount"),
     ([{"state": "Approved", "currencyCode": "EUR", "transactionAmount": "1.5",
        "clientSystemTransactionId": "R"}], "transactionAmount"),
     ([{"currencyCode": "EUR", "transactionAmount": "1", "clientSystemTransactionId": "R"}],
      "state")],
)
def test_bad_records_raise_response_error_naming_the_field(data: Any, needle: str) -> None:
    with pytest.raises(ResponseError) as info:
        parse_records(data, "minor")
    assert needle in info.value.message, info.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2024-05-01T10:20:30.1234567", datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=UTC)),
     ("2024-05-01T10:20:30", datetime(2024, 5, 1, 10, 20, 30, tzinfo=UTC)),
     ("2024-05-01T10:20:30.5Z", datetime(2024, 5, 1, 10, 20, 30, 500000, tzinfo=UTC)),
     ("2024-05-01T10:20:30.123+02:00",
      datetime(2024, 5, 1, 10, 20, 30, 123000, tzinfo=timezone(timedelta(hours=2)))),
     ("yesterday", None), ("2024-13-01T10:20:30", None)],
)
def test_parse_timestamp(text: str, expected: datetime | None) -> None:
    assert parse_timestamp(text) == expected, text


def test_format_timestamp_is_the_spec_form() -> None:
    value = datetime(2024, 5, 1, 12, 20, 30, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(value) == "2024-05-01T10:20:30.1234560"


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9998, 1, 1),
                    timezones=st.just(UTC)))
def test_timestamp_round_trip(value: datetime) -> None:
    text = format_timestamp(value)
    assert len(text.rsplit(".", 1)[1]) == 7, text
    assert parse_timestamp(text) == value, text


# ------------------------------------------------------------------------------- ledger

EUR = "EUR"


def D(text: str) -> Decimal:
    return Decimal(text)


def bal(kind: Any = "preauth", amount: str = "100.00", state: str = "Approved",
        followups: list[tuple[Any, str, str]] | None = None) -> Balance:
    original = Entry(kind, state, D(amount), EUR, "ORDER-1")
    fus = [Entry(k, s, D(a), EUR, f"ORDER-1-{i}") for i, (k, a, s) in enumerate(followups or [])]
    return Balance.of(original, fus)


def refused(balance: Balance, op: Any, amount: str | None = None,
            currency: str | None = None) -> str:
    with pytest.raises(RefusedError) as info:
        check_followup(balance, op, D(amount) if amount else None, currency)
    return info.value.message


def test_defaults_are_the_full_remaining_amount() -> None:
    assert check_followup(bal(), "capture") == D("100.00")
    partly = bal(followups=[("capture", "30.00", "Approved")])
    assert check_followup(partly, "capture") == D("70.00")
    assert check_followup(partly, "refund") == D("30.00")
    assert check_followup(bal("sale"), "refund") == D("100.00")
    assert check_followup(bal(), "reverse") == D("100.00")
    assert bal().remaining("reverse") == D("100.00")


def test_only_approved_followups_count() -> None:
    b = bal(followups=[("capture", "30.00", "Errored"), ("capture", "20.00", "Approved"),
                       ("refund", "5.00", "Declined"), ("refund", "5.00", "Approved")])
    assert (b.captured, b.refunded) == (D("20.00"), D("5.00")), b
    assert b.capturable == D("80.00"), b
    assert b.refundable == D("15.00"), b


def test_over_capture_shows_the_numbers() -> None:
    msg = refused(bal(followups=[("capture", "60.00", "Approved")]), "capture", "50.00")
    for part in ("50.00 EUR", "40.00 EUR", "authorised 100.00 EUR", "captured 60.00 EUR"):
        assert part in msg, f"{part!r} missing from {msg!r}"


def test_full_capture_then_capture_refused() -> None:
    msg = refused(bal(followups=[("capture", "100.00", "Approved")]), "capture")
    assert "fully captured" in msg, msg
    assert "captured 100.00 EUR" in msg, msg


def test_over_refund_shows_the_numbers() -> None:
    b = bal("sale", followups=[("refund", "80.00", "Approved")])
    msg = refused(b, "refund", "30.00")
    for part in ("30.00 EUR", "captured − refunded = 20.00 EUR", "refunded 80.00 EUR"):
        assert part in msg, f"{part!r} missing from {msg!r}"


def test_refund_with_nothing_captured_or_all_refunded() -> None:
    assert "nothing captured yet" in refused(bal(), "refund")
    done = bal("sale", followups=[("refund", "100.00", "Approved")])
    assert "already fully refunded" in refused(done, "refund")


def test_reversal_rules() -> None:
    captured = bal(followups=[("capture", "10.00", "Approved")])
    msg = refused(captured, "reverse")
    assert "captured 10.00 EUR" in msg, msg
    assert "cannot be reversed" in msg, msg
    assert "only a pre-authorisation can be reversed" in refused(bal("sale"), "reverse")
    msg = refused(bal(), "reverse", "50.00")
    assert "100.00 EUR" in msg, msg
    assert "50.00 EUR" in msg, msg
    reversed_ = bal(followups=[("reversal", "100.00", "Approved")])
    assert reversed_.reversed
    assert "reversed" in refused(reversed_, "capture")
    assert "reversed" in refused(reversed_, "refund")


def test_capture_of_a_sale_is_refused() -> None:
    assert "is a sale" in refused(bal("sale"), "capture", "1.00")


def test_currency_mismatch_names_both() -> None:
    msg = refused(bal(), "capture", "1.00", "usd")
    assert "USD" in msg, msg
    assert "EUR" in msg, msg


@pytest.mark.parametrize("state", ["Pending", "Declined", "Errored", "Expired"])
def test_original_not_approved(state: str) -> None:
    msg = refused(bal(state=state), "capture")
    assert state in msg, msg
    assert "not Approved" in msg, msg
    b = bal(state=state)
    assert b.authorised == 0, b
    assert b.capturable == 0, b


def test_non_positive_amount_refused() -> None:
    assert "greater than zero" in refused(bal(), "capture", "0")


def test_followup_as_original_is_refused() -> None:
    with pytest.raises(RefusedError, match="not a sale or pre-authorisation"):
        Balance.of(Entry("capture", "Approved", D("1"), EUR, "X"))


def rec(ref: str, type_: str, amount: str, state: str = "Approved",
        invoice: str | None = None) -> Any:
    from walletctl.models.records import TransactionRecord

    return TransactionRecord.from_wire({
        "state": state, "currencyCode": "EUR", "transactionAmount": amount,
        "clientSystemTransactionId": ref, "type": type_, "clientSystemInvoiceId": invoice,
    })


def test_balance_from_records() -> None:
    records = [rec("O", "ecom.preAuthorisation", "50.00"),
               rec("O-CAP1", "ecom.capture", "20.00", invoice="O"),
               rec("O-REF1", "ecom.refund", "5.00", invoice="O"),
               rec("OTHER-CAP1", "ecom.capture", "9.00", invoice="OTHER")]
    b = balance_from_records("O", records)
    assert (b.authorised, b.captured, b.refunded) == (D("50.00"), D("20.00"), D("5.00")), b
    with pytest.raises(RefusedError, match="O-CAP1 is a capture"):
        balance_from_records("O-CAP1", records)
    with pytest.raises(RefusedError, match="no sale or pre-authorisation"):
        balance_from_records("NOPE", [])


def test_record_with_unknown_currency_is_refused_not_misread() -> None:
    """An unknown code has no exponent: reading "1234" as 1234.00 would be 100× off."""
    data = [{"state": "Approved", "currencyCode": "ABC", "transactionAmount": "1234",
             "clientSystemTransactionId": "R"}]
    with pytest.raises(ResponseError) as info:
        parse_records(data, "minor")
    assert "currencyCode" in info.value.message, info.value.message
    data[0]["currencyCode"] = "eur"
    (parsed,) = parse_records(data, "minor")
    assert parsed.currency_code == "EUR", parsed.currency_code
    assert parsed.transaction_amount == Decimal("12.34"), parsed.transaction_amount


@pytest.mark.parametrize("op", ["capture", "refund"])
def test_limits_are_exact_to_the_minor_unit(op: Any) -> None:
    b = bal("preauth", "100.00", followups=[("capture", "60.00", "Approved"),
                                            ("refund", "20.00", "Approved")])
    left = {"capture": D("40.00"), "refund": D("40.00")}[op]
    assert check_followup(b, op, left) == left
    msg = refused(b, op, str(left + D("0.01")))
    assert "40.01 EUR" in msg, msg
    assert "40.00 EUR" in msg, msg


@pytest.mark.parametrize("order", [("apmName", "apmProviderName"), ("apmProviderName", "apmName")])
def test_response_field_under_two_spellings_is_not_an_error(order: tuple[str, str]) -> None:
    """2.5 names it apmName, the samples apmProviderName: a gateway may send both."""
    details = {order[0]: "WalletV2" if order[0] == "apmName" else "Other",
               order[1]: "WalletV2" if order[1] == "apmName" else "Other"}
    rec = {"state": "Approved", "currencyCode": "EUR", "transactionAmount": "1",
           "clientSystemTransactionId": "R", "apmDetails": details}
    (parsed,) = parse_records([rec], "minor")
    assert parsed.apm_details is not None
    assert parsed.apm_details.apm_name == "WalletV2", "the table spelling must win"


def test_requests_still_refuse_a_field_given_twice() -> None:
    from walletctl.errors import RequestValidationError
    from walletctl.models.followup import FollowUpRequest

    body = {"merchantId": "M", "storeId": "S", "userId": "U", "type": "ecom.capture",
            "amount": "1.00", "currencyCode": "EUR", "clientSystemTransactionId": "A-CAP1",
            "clientSystemInvoiceId": "A",
            "apmDetails": {"apmProvider": "WalletV2", "apmProviderName": "WalletV2"}}
    with pytest.raises(RequestValidationError, match="given twice"):
        FollowUpRequest.from_wire(body)


def test_followup_records_may_share_the_original_reference() -> None:
    from walletctl.ops.redirect import next_reference

    records = [rec("O", "ecom.preAuthorisation", "10.00"), rec("O", "ecom.capture", "4.00"),
               rec("O", "ecom.refund", "1.00")]
    b = balance_from_records("O", records)
    assert (b.captured, b.refunded) == (D("4.00"), D("1.00")), b
    assert next_reference("O", "capture", records) == "O-CAP2"
    assert next_reference("O", "refund", records) == "O-REF2"
    with pytest.raises(RefusedError, match="O is a capture"):
        balance_from_records("O", records[1:])
