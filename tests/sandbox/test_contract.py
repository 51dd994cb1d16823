"""Contract tests: the real HTTP API of the sandbox, in-process (Starlette TestClient)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from sandbox_fixtures import (
    AUTH_HEADERS,
    MERCHANT_ID,
    STORE_ID,
    FakeClock,
    client_class,
    make_checkout_body,
    make_followup_body,
)
from walletctl.sandbox.app import create_app, store_of
from walletctl.sandbox.config import SandboxConfig

from .helpers import (
    APM,
    CHECKOUT,
    approved,
    checkout,
    decide,
    followup,
    ledger,
    lookup,
    message,
    records,
)

# -- checkout ------------------------------------------------------------------------------


def test_checkout_creates_pending_transaction(sandbox_client: Any) -> None:
    resp = sandbox_client.post(CHECKOUT, json=make_checkout_body("ORD-1"))
    assert resp.status_code == 200, resp.text
    assert set(resp.json()) == {"redirectUrl"}
    assert re.match(r"^http://testserver/pay/[\w-]{20,}$", resp.json()["redirectUrl"])
    [rec] = records(sandbox_client, "ORD-1")
    assert rec["state"] == "Pending"
    assert rec["transactionAmount"] == 1234
    assert rec["type"] == "ecom.sale"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}$", rec["transactionDateTime"])
    assert rec["transactionDateTime"] == "2024-05-01T10:20:30.1234560"  # the injected clock


def test_checkout_keys_are_case_insensitive(sandbox_client: Any) -> None:
    body = make_checkout_body("ORD-CASE")
    body["MERCHANTID"] = body.pop("merchantId")
    del body["checkoutDetails"]
    body["checkoutdetails"] = {"PaymentMethod": "WalletV2", "CardHolderEmail": "a@b.example"}
    resp = sandbox_client.post(CHECKOUT, json=body)
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b.pop("merchantId"), "merchantId"),
        (lambda b: b.update(amount="12.34"), "amount"),
        (lambda b: b.update(currencyCode="EURO"), "currencyCode"),
        (lambda b: b["redirectDetails"].pop("successUrl"), "successUrl"),
        (lambda b: b.update(type="ecom.refund"), "type"),
        (lambda b: b["checkoutDetails"].update(redirectUrlTimeout=901), "redirectUrlTimeout"),
        (lambda b: b.update(unexpected="x"), "unexpected"),
    ],
)
def test_checkout_validation_names_the_field(sandbox_client: Any, mutate: Any,
                                             field: str) -> None:
    body = make_checkout_body("ORD-BAD")
    mutate(body)
    resp = sandbox_client.post(CHECKOUT, json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["description"] == "GeneralValidationError"
    assert field in message(resp)
    assert ledger(sandbox_client) == []


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,2]", b'"text"', b"\xff\xfe"])
def test_unreadable_bodies_are_400(sandbox_client: Any, raw: bytes) -> None:
    resp = sandbox_client.post(CHECKOUT, content=raw,
                               headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert "(request)" in message(resp)


def test_amount_as_float_like_json_number_is_never_a_float(sandbox_client: Any) -> None:
    body = make_checkout_body("ORD-NUM")
    raw = json.dumps(body).replace('"1234"', "1234.5")
    resp = sandbox_client.post(CHECKOUT, content=raw,
                               headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    assert "amount" in message(resp)


def test_reused_checkout_reference_is_409(sandbox_client: Any) -> None:
    checkout(sandbox_client, "ORD-DUP")
    resp = sandbox_client.post(CHECKOUT, json=make_checkout_body("ORD-DUP", amount="999"))
    assert resp.status_code == 409
    assert "ORD-DUP" in message(resp)
    assert len(ledger(sandbox_client)) == 1


def test_same_reference_for_another_store_is_allowed(sandbox_client: Any) -> None:
    checkout(sandbox_client, "ORD-SHARED")
    resp = sandbox_client.post(CHECKOUT, json=make_checkout_body("ORD-SHARED", storeId="S-02"))
    assert resp.status_code == 200, resp.text


# -- auth ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, 401),
        ("Bearer sandbox-api-key", 401),
        ("PublicApiKey wrong-key", 401),
        ("PublicApiKey", 401),
    ],
)
def test_auth_is_required(sandbox_app: Any, header: str | None, status: int) -> None:
    headers = {"Authorization": header} if header else {}
    with client_class()(sandbox_app) as client:
        for resp in (
            client.post(CHECKOUT, json=make_checkout_body("ORD-A"), headers=headers),
            client.post(APM, json=make_followup_body("C", "ORD-A", "capture", "1"),
                        headers=headers),
            client.get(APM, params={"merchantId": "M", "storeId": "S",
                                    "clientSystemTransactionId": "X"}, headers=headers),
        ):
            assert resp.status_code == status, resp.text
            assert resp.json()["description"] == "AuthenticationError"
            assert "wrong-key" not in resp.text


def test_issued_keys_do_not_authorise_redirect_checkouts(sandbox_app: Any,
                                                         sandbox_clock: FakeClock) -> None:
    """A per-transaction key (public key service) is for the browser wallet only: a redirect
    checkout needs the server key, even for the key's own merchant; an expired key is 401."""
    store = store_of(sandbox_app)
    store.issue_api_key(key="issued-1", merchant_id=MERCHANT_ID, store_id=STORE_ID,
                        expires_at=sandbox_clock() + timedelta(minutes=5), now=sandbox_clock())
    with client_class()(sandbox_app, headers={"Authorization": "PublicApiKey issued-1"}) as c:
        own = c.post(CHECKOUT, json=make_checkout_body("ORD-K1"))
        assert own.status_code == 403, own.text
        assert "server key" in message(own)
        other = c.post(CHECKOUT, json=make_checkout_body("ORD-K2", merchantId="M-OTHER"))
        assert other.status_code == 403, other.text
        sandbox_clock.advance(301)
        expired = c.post(CHECKOUT, json=make_checkout_body("ORD-K3"))
        assert expired.status_code == 401
        assert "expired" in message(expired)


# -- hosted page ---------------------------------------------------------------------------


def test_page_shows_merchant_amount_and_escaped_cart(sandbox_client: Any) -> None:
    cart = {"itemDetails": [{"productId": "SKU-1", "productName": "<script>alert(1)</script>",
                             "productQuantity": 2, "unitAmount": "617",
                             "totalAmount": "1234"}]}
    path = checkout(sandbox_client, "ORD-PAGE", shoppingCartDetails=cart)
    page = sandbox_client.get(path)
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert MERCHANT_ID in page.text
    assert "12.34 EUR" in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<script>" not in page.text
    for button in ("Approve", "Decline", "Cancel", "Leave pending"):
        assert button in page.text


@pytest.mark.parametrize(
    ("action", "location", "state", "provider"),
    [
        ("approve", "https://shop.example/ok", "Approved", "CapturedByProvider"),
        ("decline", "https://shop.example/refused", "Declined", "RefusedByCustomer"),
        ("cancel", "https://shop.example/cancel", "Cancelled", "CancelledByCustomer"),
        ("pending", "https://shop.example/pending", "Pending", None),
    ],
)
def test_page_decisions_redirect(sandbox_client: Any, action: str, location: str, state: str,
                                 provider: str | None) -> None:
    path = checkout(sandbox_client, f"ORD-{action}")
    resp = sandbox_client.post(path, data={"action": action}, follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["location"] == location
    [rec] = records(sandbox_client, f"ORD-{action}")
    assert rec["state"] == state
    assert rec.get("providerStateCode") == provider
    again = sandbox_client.post(path, data={"action": "approve"}, follow_redirects=False)
    assert again.status_code == 410  # single use
    assert sandbox_client.get(path).status_code == 410


def test_cancel_and_refused_urls_are_mandatory(sandbox_client: Any) -> None:
    # spec 2.1: M ("populate with the same value as errorUrl"); the client fills them, the
    # gateway does not
    body = make_checkout_body("ORD-DEF")
    del body["redirectDetails"]["cancelUrl"], body["redirectDetails"]["refusedUrl"]
    resp = sandbox_client.post(CHECKOUT, json=body)
    assert resp.status_code == 400
    assert message(resp) == ("redirectDetails.cancelUrl: is required; "
                             "redirectDetails.refusedUrl: is required")


def test_unknown_page_token_is_404(sandbox_client: Any) -> None:
    assert sandbox_client.get("/pay/nope").status_code == 404
    bad = sandbox_client.post("/pay/nope", data={"action": "approve"})
    assert bad.status_code == 404


def test_link_expires_with_the_injected_clock(sandbox_client: Any,
                                              sandbox_clock: FakeClock) -> None:
    details = {"paymentMethod": "WalletV2", "redirectUrlTimeout": 60}
    path = checkout(sandbox_client, "ORD-EXP", checkoutDetails=details)
    sandbox_clock.advance(59)
    assert sandbox_client.get(path).status_code == 200
    sandbox_clock.advance(1)
    resp = sandbox_client.get(path, follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["location"] == "https://shop.example/error"
    [rec] = records(sandbox_client, "ORD-EXP")
    assert rec["state"] == "Expired"
    assert decide(sandbox_client, "ORD-EXP").status_code == 409
    refused = followup(sandbox_client, "CAP-EXP", "ORD-EXP", "capture", "100")
    assert refused.status_code == 422


def test_expiry_is_seen_by_lookup_and_headless_approval(sandbox_client: Any,
                                                        sandbox_clock: FakeClock) -> None:
    details = {"paymentMethod": "WalletV2", "redirectUrlTimeout": 10}
    checkout(sandbox_client, "ORD-EXP2", checkoutDetails=details)
    sandbox_clock.advance(11)
    resp = decide(sandbox_client, "ORD-EXP2")
    assert resp.status_code == 409
    assert "expired" in message(resp)
    assert records(sandbox_client, "ORD-EXP2")[0]["state"] == "Expired"


def test_timeout_zero_never_expires(sandbox_client: Any, sandbox_clock: FakeClock) -> None:
    details = {"paymentMethod": "WalletV2", "redirectUrlTimeout": 0}
    path = checkout(sandbox_client, "ORD-NOEXP", checkoutDetails=details)
    sandbox_clock.advance(10**7)
    assert sandbox_client.get(path).status_code == 200


def test_clock_control_route_advances_time(sandbox_client: Any) -> None:
    details = {"paymentMethod": "WalletV2", "redirectUrlTimeout": 30}
    path = checkout(sandbox_client, "ORD-CLK", checkoutDetails=details)
    assert sandbox_client.post("/_sandbox/clock", json={"advanceSeconds": 31}).status_code == 200
    assert sandbox_client.get(path, follow_redirects=False).status_code == 303


def test_clock_control_is_off_by_default() -> None:
    with client_class()(create_app(SandboxConfig())) as client:
        assert client.post("/_sandbox/clock", json={"advanceSeconds": 5}).status_code == 403


# -- headless control ----------------------------------------------------------------------


def test_headless_decisions(sandbox_client: Any) -> None:
    checkout(sandbox_client, "ORD-H1", type="ecom.preAuthorization")
    resp = decide(sandbox_client, "ORD-H1")
    assert resp.status_code == 200, resp.text
    assert resp.json()["state"] == "Approved"
    assert resp.json()["providerStateCode"] == "AuthorizedByProvider"
    again = decide(sandbox_client, "ORD-H1", "decline")
    assert again.status_code == 409
    assert "already" in message(again)
    checkout(sandbox_client, "ORD-H2")
    assert decide(sandbox_client, "ORD-H2", "cancel").json()["state"] == "Cancelled"
    assert decide(sandbox_client, "ORD-NONE").status_code == 404
    assert decide(sandbox_client, "ORD-H2", "explode").status_code == 400  # like the page


def test_headless_approval_consumes_the_link(sandbox_client: Any) -> None:
    path = checkout(sandbox_client, "ORD-H3")
    decide(sandbox_client, "ORD-H3")
    assert sandbox_client.get(path).status_code == 410


def test_ambiguous_reference_needs_merchant(sandbox_client: Any) -> None:
    checkout(sandbox_client, "ORD-AMB")
    checkout(sandbox_client, "ORD-AMB", storeId="S-02")
    assert decide(sandbox_client, "ORD-AMB").status_code == 409
    ok = sandbox_client.post("/_sandbox/checkouts/ORD-AMB/approve",
                             params={"merchantId": MERCHANT_ID, "storeId": "S-02"})
    assert ok.status_code == 200, ok.text


# -- follow-ups ----------------------------------------------------------------------------


def test_partial_and_multiple_captures_up_to_authorised(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-1", "1000", "ecom.preAuthorization")
    first = followup(sandbox_client, "AUTH-1-C1", "AUTH-1", "capture", "400")
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["state"] == "Approved"
    assert body["providerStateCode"] == "CapturedByProvider"
    assert body["clientSystemTransactionId"] == "AUTH-1-C1"
    assert body["currencyCode"] == "EUR"
    assert body["apmDetails"] == {"apmProviderName": "WalletV2", "apmPaymentMethod": "ecom"}
    assert followup(sandbox_client, "AUTH-1-C2", "AUTH-1", "capture", "600").status_code == 200
    over = followup(sandbox_client, "AUTH-1-C3", "AUTH-1", "capture", "1")
    assert over.status_code == 422
    assert "fully captured" in message(over)
    recs = records(sandbox_client, "AUTH-1")
    assert [r["clientSystemTransactionId"] for r in recs] == ["AUTH-1", "AUTH-1-C1", "AUTH-1-C2"]
    assert [r["transactionAmount"] for r in recs] == [1000, 400, 600]
    assert recs[1]["clientSystemInvoiceId"] == "AUTH-1"


def test_capture_over_the_remainder_names_the_numbers(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-2", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-2-C1", "AUTH-2", "capture", "700")
    resp = followup(sandbox_client, "AUTH-2-C2", "AUTH-2", "capture", "301")
    assert resp.status_code == 422
    assert resp.json()["description"] == "BusinessRuleViolation"
    assert "3.01 EUR" in message(resp)
    assert "3.00 EUR" in message(resp)
    assert lookup(sandbox_client, "AUTH-2-C2").status_code == 404  # nothing stored


def test_capture_of_a_sale_is_refused(sandbox_client: Any) -> None:
    approved(sandbox_client, "SALE-1")
    resp = followup(sandbox_client, "SALE-1-C", "SALE-1", "capture", "100")
    assert resp.status_code == 422
    assert "sale" in message(resp)


def test_refunds_up_to_captured_minus_refunded(sandbox_client: Any) -> None:
    approved(sandbox_client, "SALE-2", "1000")
    assert followup(sandbox_client, "SALE-2-R1", "SALE-2", "refund", "300").status_code == 200
    ok = followup(sandbox_client, "SALE-2-R2", "SALE-2", "refund", "700")
    assert ok.json()["providerStateCode"] == "RefundedByProvider"
    over = followup(sandbox_client, "SALE-2-R3", "SALE-2", "refund", "1")
    assert over.status_code == 422
    assert "already fully refunded" in message(over)


def test_refund_of_an_uncaptured_preauth_is_refused(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-3", "1000", "ecom.preAuthorization")
    resp = followup(sandbox_client, "AUTH-3-R", "AUTH-3", "refund", "100")
    assert resp.status_code == 422
    assert "nothing captured" in message(resp)
    followup(sandbox_client, "AUTH-3-C", "AUTH-3", "capture", "250")
    over = followup(sandbox_client, "AUTH-3-R2", "AUTH-3", "refund", "251")
    assert over.status_code == 422
    assert "2.50 EUR" in message(over)
    assert followup(sandbox_client, "AUTH-3-R3", "AUTH-3", "refund", "250").status_code == 200


def test_reversal_of_an_uncaptured_preauth(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-4", "1000", "ecom.preAuthorization")
    partial = followup(sandbox_client, "AUTH-4-V0", "AUTH-4", "reverse", "500")
    assert partial.status_code == 422
    resp = followup(sandbox_client, "AUTH-4-V", "AUTH-4", "reverse", "1000")
    assert resp.status_code == 200, resp.text
    assert resp.json()["providerStateCode"] == "ReversedByProvider"
    after = followup(sandbox_client, "AUTH-4-C", "AUTH-4", "capture", "100")
    assert after.status_code == 422
    assert "reversed" in message(after)
    twice = followup(sandbox_client, "AUTH-4-V2", "AUTH-4", "reverse", "1000")
    assert twice.status_code == 422


def test_reversal_after_capture_or_of_a_sale_is_refused(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-5", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-5-C", "AUTH-5", "capture", "100")
    resp = followup(sandbox_client, "AUTH-5-V", "AUTH-5", "reverse", "1000")
    assert resp.status_code == 422
    assert "captured pre-authorisation cannot be reversed" in message(resp)
    approved(sandbox_client, "SALE-5")
    sale = followup(sandbox_client, "SALE-5-V", "SALE-5", "reverse", "1234")
    assert sale.status_code == 422


def test_currency_must_match(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-6", "1000", "ecom.preAuthorization")
    resp = followup(sandbox_client, "AUTH-6-C", "AUTH-6", "capture", "100", currencyCode="USD")
    assert resp.status_code == 422
    assert "USD" in message(resp)
    assert "EUR" in message(resp)


def test_follow_up_of_a_not_approved_checkout_is_refused(sandbox_client: Any) -> None:
    checkout(sandbox_client, "ORD-PEND", type="ecom.preAuthorization")
    resp = followup(sandbox_client, "ORD-PEND-C", "ORD-PEND", "capture", "100")
    assert resp.status_code == 422
    assert "Pending" in message(resp)
    checkout(sandbox_client, "ORD-DECL", type="ecom.preAuthorization")
    decide(sandbox_client, "ORD-DECL", "decline")
    declined = followup(sandbox_client, "ORD-DECL-C", "ORD-DECL", "capture", "100")
    assert declined.status_code == 422


def test_unknown_invoice_reference_is_404(sandbox_client: Any) -> None:
    resp = followup(sandbox_client, "X-C", "NO-SUCH-ORDER", "capture", "100")
    assert resp.status_code == 404
    assert "NO-SUCH-ORDER" in message(resp)
    approved(sandbox_client, "AUTH-7", "1000", "ecom.preAuthorization")
    other_store = followup(sandbox_client, "AUTH-7-C", "AUTH-7", "capture", "100",
                           storeId="S-02")
    assert other_store.status_code == 404


def test_follow_up_of_a_follow_up_is_refused(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-8", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-8-C", "AUTH-8", "capture", "500")
    resp = followup(sandbox_client, "AUTH-8-R", "AUTH-8-C", "refund", "100")
    assert resp.status_code == 422
    assert "not a sale or pre-authorisation" in message(resp)


def test_identical_replay_returns_the_stored_result(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-9", "1000", "ecom.preAuthorization")
    first = followup(sandbox_client, "AUTH-9-C", "AUTH-9", "capture", "400")
    body = make_followup_body("AUTH-9-C", "AUTH-9", "capture", "400")
    body["CURRENCYCODE"] = body.pop("currencyCode")  # same request, other key case
    replay = sandbox_client.post(APM, json=body)
    assert replay.status_code == 200
    assert replay.json() == first.json()
    assert replay.headers["X-Sandbox-Replayed"] == "true"
    assert len([t for t in ledger(sandbox_client) if t["kind"] == "capture"]) == 1


def test_reused_reference_with_another_body_is_409(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-10", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-10-C", "AUTH-10", "capture", "400")
    resp = followup(sandbox_client, "AUTH-10-C", "AUTH-10", "capture", "500")
    assert resp.status_code == 409
    assert "AUTH-10-C" in message(resp)
    as_checkout_ref = followup(sandbox_client, "AUTH-10", "AUTH-10", "capture", "1")
    assert as_checkout_ref.status_code == 400  # same as the invoice id: model rule
    approved(sandbox_client, "SALE-10")
    clash = followup(sandbox_client, "SALE-10", "AUTH-10", "capture", "1")
    assert clash.status_code == 409


def test_follow_up_validation(sandbox_client: Any) -> None:
    body = make_followup_body("V-1", "X", "capture", "100")
    del body["clientSystemInvoiceId"]
    resp = sandbox_client.post(APM, json=body)
    assert resp.status_code == 400
    assert "clientSystemInvoiceId" in message(resp)
    neg = followup(sandbox_client, "V-2", "X", "capture", "-5")
    assert neg.status_code == 400
    assert "amount" in message(neg)


def test_follow_up_accepts_the_samples_apm_provider_name(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-11", "1000", "ecom.preAuthorization")
    body = make_followup_body("AUTH-11-C", "AUTH-11", "capture", "100")
    body["apmdetails"] = {"apmProviderName": "WalletV2"}
    del body["apmDetails"]
    assert sandbox_client.post(APM, json=body).status_code == 200


# -- magic values --------------------------------------------------------------------------


def test_magic_01_declined_by_provider(sandbox_client: Any) -> None:
    path = checkout(sandbox_client, "MAGIC-01", "1201")
    resp = sandbox_client.post(path, data={"action": "approve"}, follow_redirects=False)
    assert resp.headers["location"] == "https://shop.example/refused"
    rec = records(sandbox_client, "MAGIC-01")[0]
    assert (rec["state"], rec["providerStateCode"]) == ("Declined", "DeclinedByProvider")


def test_magic_02_capture_refused_by_provider(sandbox_client: Any) -> None:
    approved(sandbox_client, "MAGIC-02", "1202", "ecom.preAuthorization")
    resp = followup(sandbox_client, "MAGIC-02-C", "MAGIC-02", "capture", "500")
    assert resp.status_code == 422
    assert resp.json()["description"] == "RefusedByProvider"
    recs = records(sandbox_client, "MAGIC-02")
    assert recs[0]["state"] == "Approved"
    assert recs[0]["apmDetails"]["apmPayerEmailAddress"] == "ada@example.com"
    failed = recs[1]
    assert (failed["state"], failed["providerStateCode"]) == ("Errored", "RefusedByProvider")
    assert failed["apmDetails"]["apmPayerEmailAddress"] is None
    assert failed["apmDetails"]["apmProviderTransactionId"] is None
    # an Errored capture moves no money: the reversal is still allowed
    rev = followup(sandbox_client, "MAGIC-02-V", "MAGIC-02", "reverse", "1202")
    assert rev.status_code == 200, rev.text
    replay = followup(sandbox_client, "MAGIC-02-C", "MAGIC-02", "capture", "500")
    assert replay.status_code == 422
    assert replay.json() == resp.json()


def test_magic_03_stays_pending(sandbox_client: Any) -> None:
    path = checkout(sandbox_client, "MAGIC-03", "1203")
    resp = sandbox_client.post(path, data={"action": "approve"}, follow_redirects=False)
    assert resp.headers["location"] == "https://shop.example/pending"
    rec = records(sandbox_client, "MAGIC-03")[0]
    assert (rec["state"], rec["providerStateCode"]) == ("Pending", "PendingAtProvider")
    assert followup(sandbox_client, "MAGIC-03-R", "MAGIC-03", "refund", "1").status_code == 422


def test_magic_04_errored_with_null_payer_fields(sandbox_client: Any) -> None:
    checkout(sandbox_client, "MAGIC-04", "1204")
    resp = decide(sandbox_client, "MAGIC-04")
    assert resp.json()["redirectUrl"] == "https://shop.example/error"
    rec = records(sandbox_client, "MAGIC-04")[0]
    assert rec["state"] == "Errored"
    payer = {k: v for k, v in rec["apmDetails"].items() if k != "apmName"}
    assert len(payer) == 20
    assert set(payer.values()) == {None}


def test_magic_05_refund_refused(sandbox_client: Any) -> None:
    approved(sandbox_client, "MAGIC-05", "1205")
    resp = followup(sandbox_client, "MAGIC-05-R", "MAGIC-05", "refund", "100")
    assert resp.status_code == 422
    assert records(sandbox_client, "MAGIC-05")[1]["state"] == "Errored"


def test_magic_uses_minor_units_for_zero_exponent_currencies(sandbox_client: Any) -> None:
    checkout(sandbox_client, "MAGIC-JPY", "1201", currencyCode="JPY")
    decide(sandbox_client, "MAGIC-JPY")
    assert records(sandbox_client, "MAGIC-JPY")[0]["state"] == "Declined"


# -- lookup ----------------------------------------------------------------------------------


def test_lookup_unknown_reference_is_404(sandbox_client: Any) -> None:
    resp = lookup(sandbox_client, "NOPE")
    assert resp.status_code == 404
    assert resp.json()["description"] == "TransactionNotFound"


def test_lookup_requires_all_three_parameters(sandbox_client: Any) -> None:
    resp = sandbox_client.get(APM, params={"merchantId": MERCHANT_ID})
    assert resp.status_code == 400
    assert "storeId" in message(resp)
    assert "clientSystemTransactionId" in message(resp)


def test_lookup_records_carry_payer_and_addresses(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-L", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-L-C", "AUTH-L", "capture", "1000")
    original, capture = records(sandbox_client, "AUTH-L")
    assert original["type"] == "ecom.preAuthorisation"
    assert original["shippingAddress"]["city"] == "Berlin"
    assert original["billingAddress"]["countryCode"] == "DEU"
    assert original["apmDetails"]["apmName"] == "WalletV2"
    assert original["apmDetails"]["apmPayerFirstname"] == "Ada"
    assert capture["type"] == "ecom.capture"
    assert "shippingAddress" not in capture
    assert capture["apmDetails"]["apmPayerFirstname"] == "Ada"
    only_capture = records(sandbox_client, "AUTH-L-C")
    assert [r["clientSystemTransactionId"] for r in only_capture] == ["AUTH-L-C"]


@pytest.fixture
def decimal_client() -> Iterator[Any]:
    app = create_app(SandboxConfig(amount_format="decimal"))
    with client_class()(app, headers=AUTH_HEADERS) as client:
        yield client


def test_decimal_amount_format(decimal_client: Any) -> None:
    checkout(decimal_client, "DEC-1", "12.34", "ecom.preAuthorization")
    decide(decimal_client, "DEC-1")
    ok = followup(decimal_client, "DEC-1-C", "DEC-1", "capture", "2.34")
    assert ok.status_code == 200, ok.text
    assert [r["transactionAmount"] for r in records(decimal_client, "DEC-1")] == [
        Decimal("12.34"), Decimal("2.34")]
    bad = decimal_client.post(CHECKOUT, json=make_checkout_body("DEC-2", "12.345"))
    assert bad.status_code == 400


# -- control routes and error shape ------------------------------------------------------------


def test_ledger_and_reset(sandbox_client: Any) -> None:
    approved(sandbox_client, "AUTH-R", "1000", "ecom.preAuthorization")
    followup(sandbox_client, "AUTH-R-C", "AUTH-R", "capture", "250")
    rows = ledger(sandbox_client)
    assert [(r["reference"], r["invoiceReference"], r["kind"], r["amount"], r["state"])
            for r in rows] == [("AUTH-R", None, "preauth", "10.00", "Approved"),
                               ("AUTH-R-C", "AUTH-R", "capture", "2.50", "Approved")]
    assert rows[0]["merchantId"] == MERCHANT_ID
    assert sandbox_client.post("/_sandbox/reset").json() == {"reset": True}
    assert ledger(sandbox_client) == []
    assert lookup(sandbox_client, "AUTH-R").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/nowhere", 404), ("DELETE", CHECKOUT, 405), ("PUT", APM, 405)],
)
def test_no_framework_shaped_errors(sandbox_client: Any, method: str, path: str,
                                    status: int) -> None:
    resp = sandbox_client.request(method, path)
    assert resp.status_code == status
    assert set(resp.json()) == {"code", "description", "details"}


def test_openapi_document_declares_the_gateway(sandbox_client: Any) -> None:
    doc = sandbox_client.get("/openapi.json").json()
    assert {"/api/v5/checkout", "/api/v5/apmTransactions"} <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    assert {"CheckoutRequest", "FollowUpRequest", "TransactionRecord", "Error"} <= set(schemas)
    post = doc["paths"]["/api/v5/checkout"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/CheckoutRequest")


def test_every_operation_has_a_readable_id(sandbox_client: Any) -> None:
    doc = sandbox_client.get("/openapi.json").json()
    ids = {(method, path): op["operationId"] for path, item in doc["paths"].items()
           for method, op in item.items()}
    assert all(re.fullmatch(r"[a-z][A-Za-z0-9]*", i) for i in ids.values()), ids
    assert len(set(ids.values())) == len(ids)
    assert ids[("post", "/api/v5/checkout")] == "createCheckout"
    assert ids[("post", "/api/v5/apmTransactions")] == "createFollowUp"
    assert ids[("get", "/api/v5/apmTransactions")] == "lookupTransactions"


def test_the_document_types_money_as_strings(sandbox_client: Any) -> None:
    schemas = sandbox_client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("CheckoutRequest", "FollowUpRequest", "AuthorizationRequest"):
        amount = schemas[name]["properties"]["amount"]
        assert amount["type"] == "string", (name, amount)
        assert "anyOf" not in amount, (name, amount)
        assert re.fullmatch(amount["pattern"], "4000")
        assert not re.fullmatch(amount["pattern"], "40.00")  # a minor-units sandbox
        assert not re.fullmatch(amount["pattern"], "0")  # above zero
    assert schemas["CheckoutRequest"]["x-key-variants"] == {
        "shoppingcarddetails": "shoppingCartDetails"}


@pytest.mark.parametrize(("path", "methods"), [
    ("/api/v5/apmTransactions", "GET, HEAD, POST"),
    ("/_sandbox/faults", "GET, HEAD, POST"),
    ("/pay/some-token", "GET, HEAD, POST"),
    ("/api/v5/checkout", "POST"),
])
def test_a_405_allows_every_method_of_the_path(live_sandbox: Any, path: str,
                                               methods: str) -> None:
    import httpx

    resp = httpx.request("OPTIONS", live_sandbox.url + path, headers=AUTH_HEADERS, timeout=10)
    assert resp.status_code == 405
    assert resp.headers["allow"] == methods
    assert resp.json()["code"] == "GEN-405"


def test_the_values_route_lists_magic_amounts(sandbox_client: Any) -> None:
    data = sandbox_client.get("/_sandbox/values").json()
    assert set(data["magicAmounts"]) == {"01", "02", "03", "04", "05"}


# -- the store API used by the browser-wallet module --------------------------------------------


def test_walletpay_authorizations_follow_the_same_rules(sandbox_app: Any,
                                                        sandbox_clock: FakeClock) -> None:
    from decimal import Decimal

    store = store_of(sandbox_app)
    store.create_transaction(
        merchant_id=MERCHANT_ID, store_id=STORE_ID, reference="WP-1", kind="preauth",
        type_str="ecom.preauthorization", amount=Decimal("20.00"), currency="EUR",
        state="Approved", method="WalletPay", now=sandbox_clock(),
        provider_state_code="AuthorizedByProvider",
        billing={"city": "Paris", "countryCode": "FRA"},
        payer={"apmPayerEmailAddress": "p@example.com", "apmPayerID": 42},
    )
    with client_class()(sandbox_app, headers=AUTH_HEADERS) as client:
        [rec] = records(client, "WP-1")
        assert rec["apmDetails"]["apmName"] == "WalletPay"
        assert rec["apmDetails"]["apmPayerID"] == "42"
        assert rec["transactionAmount"] == 2000
        over = followup(client, "WP-1-C0", "WP-1", "capture", "2001")
        assert over.status_code == 422
        cap = followup(client, "WP-1-C", "WP-1", "capture", "2000")
        assert cap.status_code == 200, cap.text
        assert cap.json()["apmDetails"]["apmProviderName"] == "WalletPay"
        assert followup(client, "WP-1-V", "WP-1", "reverse", "2000").status_code == 422
        assert followup(client, "WP-1-R", "WP-1", "refund", "500").status_code == 200
        assert [r["clientSystemTransactionId"] for r in records(client, "WP-1")] == [
            "WP-1", "WP-1-C", "WP-1-R"]
