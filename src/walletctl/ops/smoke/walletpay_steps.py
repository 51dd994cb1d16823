"""The browser-wallet scenario: keys -> payment accounts -> authorizations -> capture -> lookup.

No browser: the emulated wallet of the walletctl sandbox mints the wallet tokens
(``POST /_sandbox/wallet/token``), and the Create Payment Account API is called the way the
client script would (``PublicApiKey`` with the key just issued). Two credentials are covered:
a device token (``CRYPTOGRAM_3DS``: the sale, with its cryptogram + ECI) and a ``PAN_ONLY`` card
(the pre-authorisation, with the sandbox's simulated 3DS result). Against a gateway that is not
a walletctl sandbox, minting a token needs a real wallet in a browser: that step is skipped
with a reason, and so is the rest of the scenario.
"""

from __future__ import annotations

import importlib.util
from functools import partial
from typing import Any

from walletctl.client.admin import THREE_DS_CHALLENGE, WALLET_TOKEN
from walletctl.ops.smoke.framework import (
    RunContext,
    ScenarioRun,
    Step,
    StepFailed,
    StepSkipped,
    check,
    check_equal,
)
from walletctl.ops.smoke.steps import APPROVED, _amounts, _money, _plan_followup, _target

# The sandbox's emulated wallet cards used here (GET /_sandbox/wallet/cards lists them all).
TOKEN_CARD = "visa-token"  # noqa: S105 - a card id. CRYPTOGRAM_3DS -> cardType Token
PAN_CARD = "visa-pan"  # PAN_ONLY -> cardType Card, needs 3DS
CREDENTIALS = {"sale": (TOKEN_CARD, "Token"), "preauth": (PAN_CARD, "Card")}


def unavailable(ctx: RunContext) -> str | None:
    """A reason when the browser-wallet operations are not installed, else None."""
    if importlib.util.find_spec("walletctl.ops.walletpay") is None:
        return "browser-wallet operations (walletctl.ops.walletpay) are not available"
    return None


def _json(response: Any, what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise StepFailed(f"{what} answered HTTP {response.status_code} with no JSON") from None


# --------------------------------------------------------------------------- steps


def public_keys(run: ScenarioRun) -> str:
    from walletctl.ops.walletpay import fetch_keys

    target = _target(run)
    keys = fetch_keys(target.client)
    target.masker.add(keys.api_key.get_secret_value())
    target.masker.add(keys.encryption_key.get_secret_value())
    check(bool(keys.api_key.get_secret_value()), "the public key service returned no apiKey")
    check(
        bool(keys.encryption_key.get_secret_value()),
        "the public key service returned no encryptionKey",
    )
    run.state["keys"] = keys
    expiry = f", expires {keys.expires_at}" if keys.expires_at else ""
    return f"API key and encryption key {keys.encryption_key_id} issued{expiry}"


def wallet_tokens(run: ScenarioRun) -> str:
    target = _target(run)
    if not target.is_walletctl_sandbox():
        raise StepSkipped(
            "a wallet token comes from the wallet provider in a browser; only the walletctl "
            "sandbox can mint one headlessly (POST /_sandbox/wallet/token)"
        )
    keys = run.state["keys"]
    tokens: dict[str, Any] = {}
    for kind, (card, _) in CREDENTIALS.items():
        response = target.admin.send(
            "POST",
            WALLET_TOKEN,
            json_body={
                "cardId": card,
                "gatewayMerchantId": target.profile.merchant_id,
                "publicKeyApi": keys.api_key.get_secret_value(),
            },
        )
        data = _json(response, "the emulated wallet")
        check_equal(response.status_code, 200, f"emulated wallet answer for card {card}")
        pmd = data.get("paymentMethodData") if isinstance(data, dict) else None
        tokenization = pmd.get("tokenizationData") if isinstance(pmd, dict) else None
        check(
            isinstance(tokenization, dict) and bool(tokenization.get("token")),
            f"the emulated wallet returned no token for card {card}",
        )
        tokens[kind] = pmd
    run.state["tokens"] = tokens
    return f"wallet tokens minted for {TOKEN_CARD} (CRYPTOGRAM_3DS) and {PAN_CARD} (PAN_ONLY)"


def create_accounts(run: ScenarioRun) -> str:
    from walletctl.models.walletpay import PaymentAccount

    target = _target(run)
    profile = target.profile
    api_key = run.state["keys"].api_key.get_secret_value()
    created: dict[str, dict[str, Any]] = {}
    for kind, (card, card_type) in CREDENTIALS.items():
        ref = run.ref(f"w{kind}", f"browser-wallet {kind}")
        data = target.client.request(
            "POST",
            "payment_accounts",
            json={
                "merchantId": profile.merchant_id,
                "storeId": profile.store_id,
                "clientSystemTransactionId": ref,
                "paymentData": {
                    "apiVersion": 2,
                    "apiVersionMinor": 0,
                    "paymentMethodData": run.state["tokens"][kind],
                },
            },
            reference=ref,
            auth=("Authorization", f"PublicApiKey {api_key}"),
        )
        check(isinstance(data, dict), "Create Payment Account did not answer a JSON object")
        target.masker.add_from(data)
        account = PaymentAccount.from_wire(data)
        check_equal(account.card_type, card_type, f"cardType of the {card} account")
        if card_type == "Token":
            check(
                bool(data.get("cryptogram")) and bool(data.get("eciIndicator")),
                "a Token account came back without cryptogram + eciIndicator",
            )
        created[kind] = {
            "id": account.transaction_account_id,
            "ref": ref,
            "cryptogram": data.get("cryptogram"),
            "eci": data.get("eciIndicator"),
        }
    run.state["accounts"] = created
    return "payment accounts created: " + ", ".join(
        f"{kind} {info['id']}" for kind, info in created.items()
    )


def get_accounts(run: ScenarioRun) -> str:
    from walletctl.ops.walletpay import get_account

    target = _target(run)
    key_id = run.state["keys"].encryption_key_id
    fetched: dict[str, Any] = {}
    for kind, (card, card_type) in CREDENTIALS.items():
        info = run.state["accounts"][kind]
        account = get_account(target.client, info["id"], key_id)
        check_equal(account.transaction_account_id, info["id"], "transactionAccountId")
        check_equal(account.card_type, card_type, f"cardType of the {card} account")
        masked = account.masked_card_number or ""
        digits = sum(ch.isdigit() for ch in masked)
        check(digits <= 10, f"Get Payment Account showed {digits} digits of the card number")
        fetched[kind] = account
    run.state["fetched"] = fetched
    return "accounts read back: " + ", ".join(
        f"{a.card_type} {a.card_network or ''} {a.masked_card_number or ''}".strip()
        for a in fetched.values()
    )


def _authorize(run: ScenarioRun, kind: str) -> str:
    from walletctl.models.walletpay import ThreeDSecure
    from walletctl.ops.walletpay import (
        build_authorization,
        prepare_authorization,
        send_authorization,
    )

    target = _target(run)
    info = run.state["accounts"][kind]
    account = run.state["fetched"][kind]
    amounts = _amounts(run)
    amount = amounts.wallet_sale if kind == "sale" else amounts.wallet_preauth
    three_ds = None
    if account.card_type == "Card":
        response = target.admin.send(
            "POST",
            THREE_DS_CHALLENGE,
            json_body={
                "transactionAccountId": info["id"],
                "merchantId": target.profile.merchant_id,
                "storeId": target.profile.store_id,
            },
        )
        data = _json(response, "the 3DS challenge")
        check_equal(response.status_code, 200, "3DS challenge status")
        target.masker.add_from(data)
        target.masker.add(data.get("authenticationValue"))
        three_ds = ThreeDSecure.from_wire(
            {k: v for k, v in data.items() if str(k).lower() != "transstatus"}
        )
    request = build_authorization(
        target.profile,
        account,
        amount=amount,
        currency=target.currency,
        reference=info["ref"],
        kind=kind,
        key_id=run.state["keys"].encryption_key_id,
        cryptogram=info["cryptogram"],
        eci=info["eci"],
        three_ds=three_ds,
    )
    result = send_authorization(target.client, prepare_authorization(target.client, request))
    check_equal(result.state, APPROVED, f"state of the {kind} authorization {info['ref']}")
    if result.amount is not None:
        check_equal(result.amount, amount, f"amount of the {kind} authorization")
    how = "cryptogram" if account.card_type == "Token" else "3DS"
    return f"{kind} of {_money(run, amount)} on a {account.card_type} account ({how}): " + (
        result.state
    )


def capture(run: ScenarioRun) -> str:
    target = _target(run)
    original = run.state["accounts"]["preauth"]["ref"]
    new_ref = run.ref("wcap", f"capture of {original}")
    plan = _plan_followup(run, "capture", original, _amounts(run).wallet_preauth, new_ref)
    response = target.client.followup(plan.request)
    check_equal(response.state, APPROVED, f"state of the capture {new_ref}")
    return f"capture of {_money(run, plan.request.amount)}: {response.state}"


def lookup(run: ScenarioRun) -> str:
    from walletctl.models.ledger import balance_from_records

    target = _target(run)
    amounts = _amounts(run)
    parts = []
    for kind, expected in (("sale", amounts.wallet_sale), ("preauth", amounts.wallet_preauth)):
        ref = run.state["accounts"][kind]["ref"]
        balance = balance_from_records(ref, target.client.lookup(ref))
        check_equal(balance.state, APPROVED, f"state of {ref}")
        check_equal(balance.kind, kind, f"kind of {ref}")
        check_equal(balance.authorised, expected, f"authorised amount of {ref}")
        check_equal(balance.captured, expected, f"captured amount of {ref}")
        parts.append(f"{kind}: {balance.summary()}")
    return "; ".join(parts)


def steps() -> tuple[Step, ...]:
    return (
        Step("public keys", public_keys, "POST publicKeys (Basic service secret)"),
        Step("wallet tokens", wallet_tokens, "emulated wallet mints two tokens"),
        Step("create payment accounts", create_accounts, "POST paymentAccounts (create API)"),
        Step("get payment accounts", get_accounts, "GET paymentAccounts/{id}"),
        Step("authorize sale", partial(_authorize, kind="sale"),
             "POST transactions ecom.sale (Token)"),
        Step("authorize pre-authorisation", partial(_authorize, kind="preauth"),
             "POST transactions ecom.preauthorization (Card + 3DS)"),
        Step("capture", capture, "POST apmTransactions capture of the pre-authorisation"),
        Step("lookup", lookup, "GET apmTransactions: both Approved, captured in full"),
    )
