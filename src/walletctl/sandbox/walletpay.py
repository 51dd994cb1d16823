"""Browser wallet (WalletPay) routes of the sandbox: gateway side, emulated wallet, demo merchant.

Gateway API (``Authorization: PublicApiKey <key>`` unless stated: the server key, or the
per-transaction key of the body's / query's merchant and store, :mod:`walletctl.sandbox.auth`;
bodies read once through :mod:`walletctl.sandbox.requests`):

* ``POST /api/v5/publicKeys`` (Basic ``userId:<service secret>``) ``{merchantId, storeId}`` ->
  ``{apiKey, encryptionKey, encryptionKeyId, expiresAt}``. Every call makes a fresh API key and
  a fresh EC P-256 key pair; ``encryptionKey`` is the base64 SubjectPublicKeyInfo (DER) of its
  public half, the key wallet tokens for this API key are encrypted to. The private half never
  leaves the sandbox (it is kept in the sandbox's store, see "State" below).
* ``POST /api/v5/paymentAccounts`` ``{merchantId, storeId, clientSystemTransactionId,
  paymentData}`` -> ``{transactionAccountId, cardType, cardNetwork, maskedCardNumber,
  expiryMonth, expiryYear[, cryptogram, eciIndicator]}`` (the last two for a device token).
  ``paymentData`` is the wallet's PaymentData (the token is
  ``paymentMethodData.tokenizationData.token``, a JSON string) or the token object itself.
* ``GET /api/v5/paymentAccounts/{id}?merchantId&storeId&encryptionKeyId`` -> the account
  (masked: first 6 / last 4). Unknown id or other merchant/store: 404; other key id: 403.
* ``POST /api/v5/transactions`` ``ecom.sale`` / ``ecom.preauthorization`` on a payment
  account. ``Token`` accounts need the account's ``cryptogram`` + ``eciIndicator`` (single
  use); ``Card`` accounts need ``threeDSecure`` from the simulated 3DS step. Stored in the
  shared ledger (method ``WalletPay``) so lookup / capture / refund / reversal work on it.

* ``GET /api/v5/publicKeys/current?merchantId&storeId``: the client script's key pre-check
  (200 ``{merchantId, storeId, status: "valid"}``, else the 401/403 the payment would get).

The emulated wallet provider (no auth; called by ``walletpay.js`` from the merchant's page):

* ``GET /wallet/cards``: the emulated wallet's test cards.
* ``POST /wallet/token`` ``{cardId, gatewayMerchantId, publicKeyApi | encryptionKey,
  messageExpirySeconds?}`` -> ``{paymentMethodData}``: mints a signed, encrypted ECv2-shaped
  token (see :mod:`walletctl.sandbox.crypto`). Both also answer under ``/_sandbox/wallet/``.

Cross-origin: ``/walletpay.js``, ``/wallet/*``, ``POST /api/v5/paymentAccounts`` and the key
pre-check answer CORS requests and preflights (:mod:`walletctl.sandbox.cors`); nothing else does.

Sandbox-only helpers (no auth; loopback tool):
* ``GET /_sandbox/wallet/rootKey``: the wallet root public key the gateway trusts.
* ``POST /_sandbox/3ds/challenge`` ``{transactionAccountId, merchantId, storeId,
  outcome?: "success" | "failure"}`` -> ``{threeDSServerTransId, authenticationValue, eci,
  transStatus}``; pass the first three as ``threeDSecure`` on the authorization.

Browser side: ``GET|HEAD /walletpay.js`` (the client script) and ``/walletpay.d.ts`` (its
TypeScript declaration; both with ETag, gzip, caching:
:mod:`walletctl.sandbox.walletpay_static`), ``GET /demo/merchant`` (demo merchant page) and
its merchant server under ``/demo/merchant/api/`` (:mod:`walletctl.sandbox.walletpay_demo`).

Modules: state and test cards in :mod:`walletctl.sandbox.walletpay_state`, route bodies in
:mod:`walletctl.sandbox.walletpay_api`; this module wires the routes.

State: issued encryption key pairs (PEM), the static key's encryption key, the wallet's
signing keys, payment accounts (with their single-use cryptogram flag), 3DS results and the
seen token ``messageId`` values live in the sandbox store (``walletpay_*`` tables of
:mod:`walletctl.sandbox.store`), so ``serve --db PATH`` keeps them across restarts;
``/_sandbox/reset`` clears all but the sandbox-level keys. Only the demo merchant's sessions
and results are in memory.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from walletctl.sandbox import pages
from walletctl.sandbox.auth import authenticate, require_scope, require_server
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.crypto import public_key_b64
from walletctl.sandbox.query import read_query
from walletctl.sandbox.requests import (
    AuthorizationBody,
    ChallengeBody,
    ChallengeRequestBody,
    PaymentAccountBody,
    PublicKeysBody,
    WalletTokenBody,
)
from walletctl.sandbox.walletpay_api import (
    authorize,
    challenge,
    challenge_expired,
    challenge_status,
    check_basic,
    check_key,
    complete_challenge,
    create_account,
    create_challenge,
    find_challenge,
    get_account,
    issue_keys,
    mint_token,
    read_body,
)
from walletctl.sandbox.walletpay_demo import demo_quote, demo_result, demo_session
from walletctl.sandbox.walletpay_state import TEST_CARDS, ApiError, WalletPayState
from walletctl.sandbox.walletpay_static import SCRIPT_DIR, Asset, serve

__all__ = ["install"]


def install(app: FastAPI, ctx: SandboxContext) -> None:
    """Add the browser-wallet routes, the client script and the demo merchant to ``app``."""
    st = WalletPayState(ctx)
    app.state.walletpay = st

    def json_route(handler: Any) -> Any:
        """``handler`` as a route: a dict it returns is answered as JSON."""
        async def wrapper(request: Request) -> Response:
            result = await handler(request)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        wrapper.__name__ = handler.__name__
        wrapper.__doc__ = handler.__doc__
        return wrapper

    async def public_keys(request: Request) -> Any:
        """Public key service: a fresh API key and encryption key (Basic userId:secret)."""
        check_basic(request, ctx)
        body = await read_body(request, PublicKeysBody)
        return issue_keys(st, body.merchant_id, body.store_id)

    async def payment_accounts(request: Request) -> Any:
        """Create Payment Account: verify + decrypt the wallet token, return the account id."""
        cred = authenticate(ctx, request)  # 401 first, before the body is read
        body = await read_body(request, PaymentAccountBody)
        require_scope(cred, body.merchant_id, body.store_id)
        return create_account(st, cred.key, body)

    async def payment_account(request: Request) -> Any:
        """Get Payment Account (masked)."""
        cred = authenticate(ctx, request)  # 401 first, before the query is read
        names = ("merchantId", "storeId", "encryptionKeyId")
        q = read_query(request.scope["query_string"], names, names)
        merchant_id, store_id = q["merchantId"], q["storeId"]
        require_scope(cred, merchant_id, store_id)
        account = get_account(st, request.path_params["account_id"], merchant_id, store_id,
                              q["encryptionKeyId"])
        return account.public()

    async def transactions(request: Request) -> Any:
        """Authorization (ecom.sale / ecom.preauthorization) on a payment account."""
        # the merchant server's step: the page's transaction key moves no money
        require_server(authenticate(ctx, request), "POST /api/v5/transactions")
        return authorize(st, await read_body(request, AuthorizationBody))

    async def three_ds_create(request: Request) -> Any:
        """A hosted 3DS challenge for one Card account, amount and reference (server key)."""
        require_server(authenticate(ctx, request), "POST /api/v5/threeDSecure")
        body = await read_body(request, ChallengeRequestBody)
        base = (ctx.config.public_url or str(request.base_url)).rstrip("/")
        return create_challenge(st, body, base)

    async def three_ds_status(request: Request) -> Any:
        """A hosted 3DS challenge: pending, expired, or its result (server key)."""
        require_server(authenticate(ctx, request), "GET /api/v5/threeDSecure/{id}")
        names = ("merchantId", "storeId")
        q = read_query(request.scope["query_string"], names, names)
        return challenge_status(st, request.path_params["challenge_id"], q["merchantId"],
                                q["storeId"])

    async def three_ds_page(request: Request) -> Any:
        """The shopper's 3DS challenge (HTML)."""
        challenge_id = request.path_params["challenge_id"]
        try:
            row, account = find_challenge(st, challenge_id)
        except ApiError:
            return HTMLResponse(pages.message_page("Not found", "There is no such 3-D Secure "
                                                   "check."), 404)
        if row.used:
            return HTMLResponse(pages.message_page("Already answered", "This 3-D Secure "
                                                   "check was already answered."), 409)
        if challenge_expired(st, row):
            return HTMLResponse(pages.message_page("Expired", "This 3-D Secure check has "
                                                   "expired: return to the shop."), 410)
        return HTMLResponse(pages.challenge_page(challenge_id, account.public(), row.data))

    async def three_ds_answer(request: Request) -> Any:
        """The shopper's answer (form field answer = pass | fail) -> 303 to the shop."""
        raw = (await request.body())[:4096].decode("utf-8", "replace")
        answers = urllib.parse.parse_qs(raw, keep_blank_values=True).get("answer") or [""]
        if len(answers) != 1 or answers[0] not in ("pass", "fail"):
            return HTMLResponse(pages.message_page("Bad request", "answer: must be pass or "
                                                   "fail, once"), 400)
        challenge_id = request.path_params["challenge_id"]
        try:
            back = complete_challenge(st, challenge_id, answers[0] == "pass")
        except ApiError as exc:
            outcome = exc.outcome()
            return HTMLResponse(pages.message_page("Not possible", outcome.body["details"][
                "message"]), outcome.status)
        if back is None:
            return HTMLResponse(pages.message_page("Done", "The 3-D Secure check is answered: "
                                                   "return to the shop."))
        sep = "&" if urllib.parse.urlsplit(back).query else "?"
        return RedirectResponse(f"{back}{sep}challengeId={challenge_id}", status_code=303)

    async def wallet_cards(request: Request) -> Any:
        """The emulated wallet's test cards (sandbox only)."""
        return {"cards": [c.public() for c in TEST_CARDS]}

    async def wallet_token(request: Request) -> Any:
        """Emulated wallet provider: mint a signed, encrypted ECv2-shaped token."""
        return mint_token(st, await read_body(request, WalletTokenBody))

    async def wallet_root_key(request: Request) -> Any:
        """The wallet root public key the gateway trusts (base64 SPKI)."""
        return {"rootKey": public_key_b64(st.signer.root), "protocolVersion": "ECv2"}

    async def three_ds_challenge(request: Request) -> Any:
        """Simulated 3DS challenge for a Card (PAN_ONLY) payment account."""
        return challenge(st, await read_body(request, ChallengeBody))

    script = Asset.load(SCRIPT_DIR, "application/javascript; charset=utf-8")
    driver = Asset.load("walletpay-testing.js", "application/javascript; charset=utf-8")
    declaration = Asset.load("walletpay.d.ts", "application/typescript; charset=utf-8")
    page = Asset.load("demo_merchant.html", "text/html; charset=utf-8")
    page_script = Asset.load("demo_merchant.js", "application/javascript; charset=utf-8")

    async def key_check(request: Request) -> Any:
        """Key pre-check of the client script: is the PublicApiKey usable for merchant/store?"""
        return check_key(request, st)

    async def client_script(request: Request) -> Any:
        """The client script (GET/HEAD; ETag, gzip; any origin may load it)."""
        return serve(script, request, cors=True)

    async def test_driver(request: Request) -> Any:
        """The browser-test driver (WalletPayTesting; GET/HEAD; any origin may load it)."""
        return serve(driver, request, cors=True)

    async def client_types(request: Request) -> Any:
        """TypeScript declaration of the client script (GET/HEAD; ETag, gzip)."""
        return serve(declaration, request, cors=True)

    async def demo_page(request: Request) -> Any:
        return serve(page, request)

    async def demo_script(request: Request) -> Any:
        return serve(page_script, request)

    async def demo_session_route(request: Request) -> Any:
        return await demo_session(request, st)

    async def demo_quote_route(request: Request) -> Any:
        return await demo_quote(request, st)

    async def demo_result_route(request: Request) -> Any:
        return await demo_result(request, st)

    async def demo_results(request: Request) -> Any:
        with st.lock:
            return {"results": list(st.demo_results)}

    # every route is in /openapi.json (walletctl.sandbox.openapi adds the bodies, queries and
    # non-JSON answers FastAPI cannot see)
    routes: list[tuple[str, str | tuple[str, ...], Any]] = [
        ("/api/v5/publicKeys", "POST", public_keys),
        ("/api/v5/publicKeys/current", "GET", key_check),
        ("/api/v5/paymentAccounts", "POST", payment_accounts),
        ("/api/v5/paymentAccounts/{account_id}", "GET", payment_account),
        ("/api/v5/transactions", "POST", transactions),
        ("/api/v5/threeDSecure", "POST", three_ds_create),
        ("/api/v5/threeDSecure/{challenge_id}", "GET", three_ds_status),
        ("/pay/3ds/{challenge_id}", ("GET", "HEAD"), three_ds_page),
        ("/pay/3ds/{challenge_id}", "POST", three_ds_answer),
        ("/wallet/cards", "GET", wallet_cards),
        ("/wallet/token", "POST", wallet_token),
        ("/_sandbox/wallet/cards", "GET", wallet_cards),
        ("/_sandbox/wallet/token", "POST", wallet_token),
        ("/_sandbox/wallet/rootKey", "GET", wallet_root_key),
        ("/_sandbox/3ds/challenge", "POST", three_ds_challenge),
        ("/walletpay.js", ("GET", "HEAD"), client_script),
        ("/walletpay.d.ts", ("GET", "HEAD"), client_types),
        ("/walletpay-testing.js", ("GET", "HEAD"), test_driver),
        ("/demo/merchant", ("GET", "HEAD"), demo_page),
        ("/demo/merchant.js", ("GET", "HEAD"), demo_script),
        ("/demo/merchant/api/session", "GET", demo_session_route),
        ("/demo/merchant/api/quote", "POST", demo_quote_route),
        ("/demo/merchant/api/result", "POST", demo_result_route),
        ("/demo/merchant/api/results", "GET", demo_results),
    ]
    for path, method, handler in routes:
        verbs = [method] if isinstance(method, str) else list(method)
        for verb in verbs:  # one operation per verb: each needs its own operationId
            app.add_api_route(path, json_route(handler), methods=[verb],
                              operation_id=re.sub(r"\W+", "_", f"{verb} {path}").strip("_").lower(),
                              tags=["sandbox" if path.startswith("/_sandbox")
                                    else "browser wallet"],
                              summary=(handler.__doc__ or "").strip().split("\n")[0] or None)
