"""ops.redirect helpers (derived references, request building) and the render layer (masks,
writers)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletctl import masking
from walletctl.config.profile import Profile
from walletctl.errors import RequestValidationError
from walletctl.models.fields import reference_problem
from walletctl.models.records import TransactionRecord
from walletctl.ops.redirect import (
    build_checkout_request,
    derive_reference,
    get_path,
    next_reference,
    set_path,
)
from walletctl.render.formats import View, show
from walletctl.render.output import to_json


def profile(**kw: Any) -> Profile:
    base: dict[str, Any] = dict(
        name="p", base_url="http://gw.example", merchant_id="M-1", store_id="S-1",
        user_id="u", currency="EUR",
        redirects={"success_url": "https://s.example/ok", "error_url": "https://s.example/e",
                   "pending_url": "https://s.example/p", "return_url": "https://s.example/r"},
    )
    base.update(kw)
    return Profile(**base)


@pytest.mark.parametrize(("op", "tag"), [("capture", "CAP"), ("refund", "REF"),
                                         ("reverse", "REV")])
def test_derived_reference_tags(op: Any, tag: str) -> None:
    assert derive_reference("ORDER-1", op, 3) == f"ORDER-1-{tag}3"


@given(st.text(min_size=1, max_size=64).filter(lambda s: reference_problem(s) is None),
       st.sampled_from(["capture", "refund", "reverse"]), st.integers(1, 99999))
def test_derived_reference_is_valid_short_and_deterministic(ref: str, op: Any, n: int) -> None:
    derived = derive_reference(ref, op, n)
    assert len(derived) <= 64, derived
    assert reference_problem(derived) is None, derived  # the rule: test_reference_rule.py
    assert derived == derive_reference(ref, op, n), "must be deterministic, never random"
    assert derived != ref


def test_long_references_that_share_a_prefix_stay_distinct() -> None:
    a, b = "A" * 60 + "-one", "A" * 60 + "-two"
    assert derive_reference(a, "capture", 1) != derive_reference(b, "capture", 1)


def rec(ref: str, type_: str, invoice: str | None = None) -> TransactionRecord:
    return TransactionRecord.from_wire({
        "state": "Approved", "currencyCode": "EUR", "transactionAmount": "1",
        "clientSystemTransactionId": ref, "type": type_, "clientSystemInvoiceId": invoice,
    })


def test_next_reference_counts_and_skips_used_ones() -> None:
    records = [rec("O", "ecom.sale")]
    assert next_reference("O", "refund", records) == "O-REF1"
    records += [rec("O-REF1", "ecom.refund", "O"), rec("O-X", "ecom.refund", "O")]
    assert next_reference("O", "refund", records) == "O-REF3"
    records.append(rec("O-REF3", "ecom.capture", "O"))  # taken by something else
    assert next_reference("O", "refund", records) == "O-REF4"


def test_set_and_get_path_are_case_insensitive() -> None:
    data: dict[str, Any] = {"CheckoutDetails": {"PaymentMethod": "x"}}
    set_path(data, "checkoutDetails.paymentMethod", "WalletV2")
    set_path(data, "addressDetails.billingAddress.city", "Berlin")
    assert data == {"CheckoutDetails": {"PaymentMethod": "WalletV2"},
                    "addressDetails": {"billingAddress": {"city": "Berlin"}}}, data
    assert get_path(data, "CHECKOUTDETAILS.paymentmethod") == "WalletV2"
    assert get_path(data, "nope.deeper") is None


def test_build_checkout_precedence_profile_file_flags() -> None:
    base = {"amount": "5.00", "clientSystemTransactionId": "F-1", "type": "ecom.sale",
            "currencyCode": "GBP", "redirectDetails": {"successUrl": "https://f.example/ok"}}
    req = build_checkout_request(profile(), base, {"amount": "7.00", "currencyCode": None})
    assert req.amount == Decimal("7.00"), "a flag overrides the file"
    assert req.currency_code == "GBP", "a None flag leaves the file's value"
    assert req.redirect_details.success_url == "https://f.example/ok", "the file beats the profile"
    assert req.redirect_details.error_url == "https://s.example/e", "the profile fills the gaps"
    assert (req.merchant_id, req.store_id, req.user_id) == ("M-1", "S-1", "u")
    assert base["amount"] == "5.00", "the caller's dict must not be modified"


def test_build_checkout_refuses_floats_by_path() -> None:
    base = {"amount": "5.00", "clientSystemTransactionId": "F-1", "type": "ecom.sale",
            "shoppingCartDetails": {"itemDetails": [{"unitAmount": 2.5}]}}
    with pytest.raises(RequestValidationError) as info:
        build_checkout_request(profile(), base)
    assert info.value.problems[0][0] == "shoppingCartDetails.itemDetails[0].unitAmount", (
        info.value.problems
    )


# --------------------------------------------------------------------------------- masking


def test_mask_secret_is_a_fingerprint_only() -> None:
    shown = masking.mask_secret("super-secret-value")
    assert "secret" not in shown, shown
    assert shown == f"****({masking.fingerprint('super-secret-value')})"
    assert masking.mask_secret("") == "(none)"
    assert masking.fingerprint("a") != masking.fingerprint("b")


@pytest.mark.parametrize(("pan", "shown"), [("4111 1111 1111 1111", "411111******1111"),
                                            ("378282246310005", "378282*****0005"),
                                            ("1234", "1234")])
def test_mask_pan(pan: str, shown: str) -> None:
    assert masking.mask_pan(pan) == shown


def test_mask_headers() -> None:
    out = masking.mask_headers({"Authorization": "PublicApiKey k-123456", "X-Api-Key": "abc123",
                                "X-Custom": "custom-secret", "Accept": "application/json"},
                               ("X-Custom",))
    assert out["Authorization"].startswith("PublicApiKey ****(sha256:"), out
    assert "k-123456" not in json.dumps(out), out
    assert "abc123" not in json.dumps(out), out
    assert "custom-secret" not in json.dumps(out), out
    assert out["Accept"] == "application/json", out


def test_mask_body_and_text() -> None:
    body = {"apiKey": "k1", "nested": [{"Cryptogram": "AgAAAAAAAIR8CQrXcIhbQAAAAAA="}],
            "paymentData": {"x": 1}, "note": "card 4111111111111111", "amount": "1234"}
    out = masking.mask_body(body)
    text = json.dumps(out)
    for secret in ("k1\"", "AgAAAAAAAIR8", "4111111111111111"):
        assert secret not in text, text
    assert out["amount"] == "1234", out
    assert out["paymentData"] == "****(structured secret)", out
    assert masking.mask_text("key=abcd1234 here", ("abcd1234",)) == (
        f"key={masking.mask_secret('abcd1234')} here"
    )


def test_scrub_masks_a_known_secret_anywhere() -> None:
    from walletctl.client.answer_guard import clean

    out = clean({"a": ["x tok-9999 y"], "b": 1}, ("tok-9999",))
    assert "tok-9999" not in json.dumps(out), out
    assert out["b"] == 1


# --------------------------------------------------------------------------------- writers


def test_writers(capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, Any]] = [
        {"a": Decimal("1.50"), "b": None, "c": {"x": 1}}, {"a": "2", "b": "q,\"r\"", "c": []}
    ]
    show(View(rows=rows), "json")
    assert json.loads(capsys.readouterr().out) == [{"a": "1.50", "b": None, "c": {"x": 1}},
                                                   {"a": "2", "b": "q,\"r\"", "c": []}]
    show(View(rows=rows), "ndjson")
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["a"] for line in lines] == ["1.50", "2"], lines
    show(View(rows=rows, columns=("a", "b", "c")), "csv")
    assert capsys.readouterr().out == 'a,b,c\n1.50,,"{""x"": 1}"\n2,"q,""r""",[]\n'
    show(View(rows=rows, document={"one": True}), "json")
    assert json.loads(capsys.readouterr().out) == {"one": True}
    assert to_json({"d": Decimal("0.10")}, indent=None) == '{"d": "0.10"}'


def test_to_json_refuses_unknown_types() -> None:
    with pytest.raises(TypeError, match="cannot encode object"):
        to_json({"x": object()})
