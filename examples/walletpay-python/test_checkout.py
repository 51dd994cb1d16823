"""The shop's checkout, paid in Chromium through the sandbox's sheet (pytest + Playwright).

Fixtures from walletctl's pytest plugin: wallet_sandbox (the gateway) and wallet_checkout
(Chromium whose pages carry the sandbox's test driver, WalletPayTesting).
"""

import pytest

from shop import Shop, serve


@pytest.fixture
def shop(wallet_sandbox):
    server = serve(Shop(wallet_sandbox.base_url, wallet_sandbox.api_key,
                        wallet_sandbox.service_secret))
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def sales(wallet_sandbox):
    return [(t["kind"], t["amount"], t["state"]) for t in wallet_sandbox.ledger()]


def test_device_token(shop, wallet_checkout, wallet_sandbox):
    checkout = wallet_checkout.open(shop + "/checkout")
    detail = checkout.pay("mc-token")  # the event.detail the page received
    assert detail["cryptogram"] and detail["eciIndicator"] == "02"
    checkout.page.wait_for_selector("#result:text('Payment Approved')")
    assert sales(wallet_sandbox) == [("sale", "12.34", "Approved")]


def test_pan_only_card_through_3ds(shop, wallet_checkout, wallet_sandbox):
    checkout = wallet_checkout.open(shop + "/checkout")
    detail = checkout.pay("visa-pan")
    assert "cryptogram" not in detail  # a PAN_ONLY card: 3-D Secure instead
    assert checkout.challenge("pass")["amount"] == "12.34 EUR"  # the shopper's page
    checkout.page.wait_for_selector("#result:text('Payment Approved')")
    assert sales(wallet_sandbox) == [("sale", "12.34", "Approved")]


def test_failed_3ds_is_declined(shop, wallet_checkout, wallet_sandbox):
    checkout = wallet_checkout.open(shop + "/checkout")
    checkout.pay("visa-pan")
    checkout.challenge("fail")
    checkout.page.wait_for_selector("#result:text('Payment Declined')")
    assert sales(wallet_sandbox) == [("sale", "12.34", "Declined")]
