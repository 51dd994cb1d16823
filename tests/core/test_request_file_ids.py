"""A checkout request file cannot silently switch merchant, store or user."""

from __future__ import annotations

import pytest

from walletctl.config.profile import Profile
from walletctl.errors import RequestValidationError
from walletctl.ops.redirect import build_checkout_request

PROFILE = Profile(
    name="prod",
    base_url="https://gw.example",
    merchant_id="M-1",
    store_id="S-1",
    user_id="ops",
    currency="EUR",
    redirects={
        "success_url": "https://s.example/ok",
        "error_url": "https://s.example/err",
        "pending_url": "https://s.example/p",
        "return_url": "https://s.example/r",
    },
)
BASE = {"amount": "10.00", "clientSystemTransactionId": "O-1", "type": "ecom.sale"}


@pytest.mark.parametrize(
    ("key", "field"), [("MerchantId", "merchantId"), ("storeid", "storeId"), ("userId", "userId")]
)
def test_a_different_id_in_the_file_is_refused(key: str, field: str) -> None:
    with pytest.raises(RequestValidationError) as info:
        build_checkout_request(PROFILE, {**BASE, key: "OTHER"})
    path, rule = info.value.problems[0]
    assert path == field, info.value.problems
    assert "'OTHER'" in rule, rule
    assert "profile prod" in rule, rule


def test_the_profiles_ids_may_be_repeated_and_are_used() -> None:
    req = build_checkout_request(PROFILE, {**BASE, "merchantId": "M-1"})
    assert (req.merchant_id, req.store_id, req.user_id) == ("M-1", "S-1", "ops")
