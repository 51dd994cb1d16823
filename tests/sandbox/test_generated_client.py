"""A client generated from the sandbox's own ``/openapi.json`` (openapi-python-client, the
generator merchants use) drives a real sandbox: checkout -> approve -> capture -> lookup, and
an error comes back as the typed gateway error object.

What this proves about the document: the operation ids make readable method names, money is
a ``str`` in the generated request models (never a float), the enums are the spellings the
server accepts, and every answer the flow meets parses into its declared model.
"""

from __future__ import annotations

import base64
import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from sandbox_fixtures import MERCHANT_ID, SANDBOX_API_KEY, STORE_ID, USER_ID
from walletctl.models.sandbox_values import DEFAULT_SERVICE_SECRET
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

PACKAGE = "sandbox_gateway_client"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as served:
        yield served


@pytest.fixture(scope="module")
def generation(sandbox: EmbeddedSandbox, tmp_path_factory: pytest.TempPathFactory,
               ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The generator run once on the served ``/openapi.json``: its output folder and run."""
    out = tmp_path_factory.mktemp("generated")
    doc = out / "openapi.json"
    doc.write_bytes(httpx.get(f"{sandbox.url}/openapi.json", timeout=10).content)
    tools = str(Path(sys.executable).parent)  # the generator runs ruff over what it writes
    done = subprocess.run(
        [str(Path(tools) / "openapi-python-client"), "generate", "--path", str(doc),
         "--meta", "none", "--output-path", str(out / PACKAGE)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out, done


@pytest.fixture
def generated(generation: tuple[Path, subprocess.CompletedProcess[str]]) -> Iterator[Any]:
    """The generated package, imported (removed from sys.modules after), unedited."""
    out, _ = generation
    sys.path.insert(0, str(out))
    try:
        yield _Modules()
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


class _Modules:
    """``generated.x.y`` -> ``sandbox_gateway_client.x.y`` imported on first use."""

    def __getattr__(self, dotted: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{dotted.replace('__', '.')}")


def test_generated_client_checkout_approve_capture_lookup(
        generated: Any, sandbox: EmbeddedSandbox) -> None:
    models = generated.models
    client = generated.client.AuthenticatedClient(
        base_url=sandbox.url, token=SANDBOX_API_KEY, prefix="PublicApiKey")
    ref, capture_ref = "GEN-CLIENT-1", "GEN-CLIENT-1-CAP"

    checkout_body = models.CheckoutRequest(
        merchant_id=MERCHANT_ID, store_id=STORE_ID, user_id=USER_ID,
        type_=models.CheckoutRequestType.ECOM_PREAUTHORIZATION, amount="4000",
        currency_code=models.CheckoutRequestCurrencycode.EUR,
        client_system_transaction_id=ref,
        checkout_details=models.CheckoutDetailsBody(payment_method="WalletV2"),
        redirect_details=models.RedirectDetailsBody(**{
            f"{what}_url": f"https://shop.example/{what}"
            for what in ("return", "success", "pending", "error", "cancel", "refused")}))
    assert models.CheckoutRequest.__annotations__["amount"] == "str"  # money is never a float
    created = generated.api__gateway__create_checkout.sync_detailed(
        client=client, body=checkout_body)
    assert created.status_code == 200, created.content
    assert isinstance(created.parsed, models.CheckoutResponse)
    assert "/pay/" in created.parsed.redirect_url

    decided = generated.api__sandbox__decide_checkout.sync_detailed(
        ref, models.DecideCheckoutAction.APPROVE, client=client,
        merchant_id=MERCHANT_ID, store_id=STORE_ID)
    assert decided.status_code == 200, decided.content
    assert isinstance(decided.parsed, models.DecideCheckoutResult)
    assert decided.parsed.state == "Approved"

    captured = generated.api__gateway__create_follow_up.sync_detailed(
        client=client, body=models.FollowUpRequest(
            merchant_id=MERCHANT_ID, store_id=STORE_ID, user_id=USER_ID,
            type_=models.FollowUpRequestType.ECOM_CAPTURE, amount="4000",
            currency_code=models.FollowUpRequestCurrencycode.EUR,
            client_system_transaction_id=capture_ref, client_system_invoice_id=ref,
            apm_details=models.ApmDetailsBody(apm_provider="WalletV2")))
    assert captured.status_code == 200, captured.content
    assert isinstance(captured.parsed, models.FollowUpResponse)

    found = generated.api__gateway__lookup_transactions.sync_detailed(
        client=client, merchant_id=MERCHANT_ID, store_id=STORE_ID,
        client_system_transaction_id=ref)
    assert found.status_code == 200, found.content
    records = found.parsed
    assert [type(r) for r in records] == [models.TransactionRecord] * 2
    assert {r.client_system_transaction_id for r in records} == {ref, capture_ref}
    assert {r.transaction_amount for r in records} == {4000}

    # a typed error: the gateway error object, as its model
    missing = generated.api__gateway__lookup_transactions.sync_detailed(
        client=client, merchant_id=MERCHANT_ID, store_id=STORE_ID,
        client_system_transaction_id="GEN-CLIENT-NONE")
    assert missing.status_code == 404
    assert isinstance(missing.parsed, models.Error)
    assert missing.parsed.code == "TRX-404"
    assert "clientSystemTransactionId" in missing.parsed.details.message

    unauthorized = generated.client.AuthenticatedClient(
        base_url=sandbox.url, token="not-the-key", prefix="PublicApiKey")
    refused = generated.api__gateway__create_checkout.sync_detailed(
        client=unauthorized, body=checkout_body)
    assert refused.status_code == 401
    assert isinstance(refused.parsed, models.Error)
    assert refused.parsed.code == "AUTH-401"


def test_generated_client_walletpay_server_flow(
        generated: Any, sandbox: EmbeddedSandbox) -> None:
    """The browser wallet's server side, as a merchant's backend and the wallet script call
    it, through the generated client only: a transaction key from the public key service
    (Basic), the emulated wallet's token, a payment account (the transaction key), then the
    authorization (the server key) - each answer its declared model."""
    models = generated.models
    basic = base64.b64encode(f"{USER_ID}:{DEFAULT_SERVICE_SECRET}".encode()).decode()
    service = generated.client.AuthenticatedClient(base_url=sandbox.url, token=basic,
                                                   prefix="Basic")
    keys = generated.api__browser_wallet__create_public_key.sync_detailed(
        client=service, body=models.PublicKeysRequest(merchant_id=MERCHANT_ID,
                                                      store_id=STORE_ID))
    assert keys.status_code == 200, keys.content
    assert isinstance(keys.parsed, models.PublicKeysResponse)

    anyone = generated.client.Client(base_url=sandbox.url)
    token = generated.api__sandbox__create_sandbox_wallet_token.sync_detailed(
        client=anyone, body=models.WalletTokenRequest(
            card_id=models.WalletTokenRequestCardid.VISA_TOKEN, gateway_merchant_id=MERCHANT_ID,
            public_key_api=keys.parsed.api_key))
    assert token.status_code == 200, token.content
    assert isinstance(token.parsed, models.WalletPaymentData)
    sealed = token.parsed.payment_method_data.tokenization_data.token

    browser = generated.client.AuthenticatedClient(
        base_url=sandbox.url, token=keys.parsed.api_key, prefix="PublicApiKey")
    checked = generated.api__browser_wallet__check_public_key.sync_detailed(
        client=browser, merchant_id=MERCHANT_ID, store_id=STORE_ID)
    assert checked.status_code == 200, checked.content
    assert isinstance(checked.parsed, models.PublicKeyStatus)
    account = generated.api__browser_wallet__create_payment_account.sync_detailed(
        client=browser, body=models.PaymentAccountRequest(
            merchant_id=MERCHANT_ID, store_id=STORE_ID, client_system_transaction_id="GEN-WP-1",
            payment_data=sealed))
    assert account.status_code == 200, account.content
    assert isinstance(account.parsed, models.PaymentAccount)

    server = generated.client.AuthenticatedClient(
        base_url=sandbox.url, token=SANDBOX_API_KEY, prefix="PublicApiKey")
    authorized = generated.api__browser_wallet__authorize_transaction.sync_detailed(
        client=server, body=models.AuthorizationRequest(
            merchant_id=MERCHANT_ID, store_id=STORE_ID, user_id=USER_ID,
            type_=models.AuthorizationRequestType.ECOM_SALE, amount="1500",
            currency_code=models.AuthorizationRequestCurrencycode.EUR,
            client_system_transaction_id="GEN-WP-1",
            transaction_account_id=account.parsed.transaction_account_id,
            encryption_key_id=keys.parsed.encryption_key_id,
            cryptogram=account.parsed.cryptogram, eci_indicator=account.parsed.eci_indicator))
    assert authorized.status_code == 200, authorized.content
    assert isinstance(authorized.parsed, models.AuthorizationResponse)
    assert authorized.parsed.state == "Approved"
    assert authorized.parsed.transaction_account_id == account.parsed.transaction_account_id


def test_the_document_generates_without_warnings(
        generation: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, done = generation
    said = done.stdout + done.stderr
    assert "warning" not in said.lower(), said[-3000:]
    models = {p.stem for p in (out / PACKAGE / "models").glob("*.py")}
    # one class per request model (no ItemDetailType1/Type2 halves), readable answer names
    assert {"item_detail", "discount_detail", "wallet_token_request", "sandbox_health",
            "payment_account", "authorization_response", "demo_session", "demo_result",
            "three_d_secure_status", "ledger"} <= models
    assert not [m for m in models if re.fullmatch(
        r"(item_detail|discount_detail|wallet_token_request)_type_\d+", m)]
    assert not [m for m in models if "_sandbox_" in m and m.endswith(("_get", "_post"))]
