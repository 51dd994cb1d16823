"""The smoke scenarios (docs/ci.md): the catalogue, their :class:`Amounts` and their steps, which
run through walletctl's own request building, pre-flight and client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from walletctl.client.admin import THREE_DS_CHALLENGE, WALLET_TOKEN
from walletctl.errors import GatewayError, RefusedError, UsageError
from walletctl.models.ledger import KIND_OF_OP, Balance, balance_from_records, kind_of
from walletctl.models.money import exponent, format_major, to_decimal
from walletctl.ops.smoke import (
    RunContext,
    Scenario,
    ScenarioRun,
    Step,
    StepFailed,
    StepSkipped,
    check,
    check_equal,
)

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.redirect import FollowUpPlan

__all__ = ["SCENARIOS", "Amounts", "describe", "select"]


@dataclass(frozen=True)
class Amounts:
    """Scenario amounts in major units of the run's currency (``--amount NAME=VALUE``)."""

    sale: Decimal = Decimal(10)
    preauth: Decimal = Decimal(50)
    capture1: Decimal = Decimal(20)
    capture2: Decimal = Decimal(15)
    refund: Decimal = Decimal(5)
    reversal_preauth: Decimal = Decimal(30)
    refusal_preauth: Decimal = Decimal(40)
    wallet_sale: Decimal = Decimal(12)
    wallet_preauth: Decimal = Decimal(25)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def with_overrides(self, pairs: list[str]) -> Amounts:
        """Apply ``NAME=VALUE`` pairs; raises UsageError naming the bad pair."""
        changes: dict[str, Decimal] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in self.names():
                raise UsageError(f"--amount: {pair!r} must be NAME=VALUE with NAME one of "
                                 + ", ".join(self.names()))
            try:
                amount = to_decimal(value.strip())
            except ValueError as exc:
                raise UsageError(f"--amount {name}: {exc}") from None
            if amount <= 0:
                raise UsageError(f"--amount {name}: must be greater than zero")
            changes[name] = amount
        return replace(self, **changes)


# -- the redirect wallet -----------------------------------------------------------------------

APPROVED = "Approved"
# checkout's redirectDetails where the profile's [redirects] has none (its keys)
DEFAULT_REDIRECTS = {
    "return_url": "https://shop.example/smoke/return",
    "success_url": "https://shop.example/smoke/ok",
    "pending_url": "https://shop.example/smoke/pending",
    "error_url": "https://shop.example/smoke/error",
    "cancel_url": "https://shop.example/smoke/cancel",
    "refused_url": "https://shop.example/smoke/refused",
}


def _amounts(run: ScenarioRun) -> Amounts:
    return run.ctx.amounts or Amounts()


def _money(run: ScenarioRun, amount: Decimal) -> str:
    return format_major(amount, run.target.currency)


def _plan_followup(run: ScenarioRun, op: str, original: str, amount: Decimal | None,
                   new_ref: str) -> FollowUpPlan:
    """walletctl's own follow-up path: lookup + pre-flight (raises RefusedError)."""
    from walletctl.ops.redirect import plan_followup

    target = run.target
    return plan_followup(target.client, op, original, amount=amount,  # type: ignore[arg-type]
                         currency=target.currency, new_reference=new_ref)


# What each step needs (the hint when it fails): profile settings are named as
# `walletctl profile set NAME KEY VALUE` spells them.
NEEDS_CHECKOUT = ("the profile's base_url, merchant_id, store_id, user_id and API key (auth.*) "
                  "accepted by the gateway's checkout path (paths.checkout)")
NEEDS_APPROVE = ("a headless approver: a walletctl sandbox's admin route (a sandbox with an "
                 "admin token: the profile's auth.sandbox_admin_token_env names the variable "
                 "holding it, else $WALLETCTL_SANDBOX_TOKEN), or --approve-url-command CMD")
NEEDS_LOOKUP = ("the gateway's lookup (GET paths.apm_transactions) answering the run's "
                "records with the amounts and states the scenario expects")
NEEDS_FOLLOWUP = ("an Approved original and the gateway's follow-up path "
                  "(paths.apm_transactions) accepting the profile's API key")
NEEDS_REFUSAL = ("a gateway that refuses what the spec forbids (HTTP 422 or a state that is "
                 "not Approved) on its follow-up path (paths.apm_transactions)")
NEEDS_KEYS = ("the public key service (paths.public_keys) and its secret (auth.service_secret_env"
              " or auth.service_secret_file)")
NEEDS_WALLET = ("a walletctl sandbox's wallet routes (tokens minted headlessly) and the public "
                "keys of the previous step")
NEEDS_AUTHORIZE = ("the payment accounts of the previous steps and the gateway's "
                   "authorization path (paths.transactions)")


def checkout_step(tag: str, kind: str, amount_of: Callable[[Amounts], Decimal]) -> Step:
    """POST checkout (``kind`` sale|preauth) under a fresh reference; keep the redirect URL."""

    def action(run: ScenarioRun) -> str:
        from pydantic.alias_generators import to_camel

        from walletctl.models.checkout import parse_checkout_type
        from walletctl.ops.redirect import build_checkout_request

        target = run.target
        amount = amount_of(_amounts(run))
        ref = run.ref(tag, f"{kind} checkout")
        redirects = {to_camel(key): url for key, url in DEFAULT_REDIRECTS.items()
                     if key not in target.profile.redirects}
        request = build_checkout_request(
            target.profile, {"redirectDetails": redirects} if redirects else None,
            {"type": parse_checkout_type(kind), "amount": str(amount),
             "currencyCode": target.currency, "clientSystemTransactionId": ref,
             "providerDiscretionaryData": f"walletctl smoke {run.ctx.run_id}"})
        url = target.client.checkout(request).redirect_url
        check(url.startswith(("https://", "http://")),
              f"checkout answered a redirectUrl that is not an http(s) URL: {url[:80]!r}")
        run.state.update(redirect_url=url, original=ref, amount=amount)
        return f"{kind} of {_money(run, amount)}, redirectUrl received"

    return Step("checkout", action, NEEDS_CHECKOUT)


def approve_step() -> Step:
    def action(run: ScenarioRun) -> str:
        return run.target.approve(run.state["original"], run.state["redirect_url"])

    return Step("approve", action, NEEDS_APPROVE)


def lookup_approved_step(kind: str) -> Step:
    """Lookup: the original is Approved with the checkout's amount and currency."""

    def action(run: ScenarioRun) -> str:
        from walletctl.models.outcome import find_record

        target = run.target
        ref = run.state["original"]
        if (rec := find_record(target.settled_records(ref), ref)) is None:
            raise StepFailed(f"lookup of {ref} returned no record with that reference")
        check_equal(rec.state, APPROVED, f"state of {ref}")
        check_equal(rec.transaction_amount, run.state["amount"], f"transactionAmount of {ref}")
        check_equal(rec.currency_code.upper(), target.currency, f"currencyCode of {ref}")
        check_equal(kind_of(rec.type), kind, f"type of {ref} ({rec.type})")
        return f"{rec.state}, {_money(run, rec.transaction_amount)}"

    return Step("lookup approved", action, NEEDS_LOOKUP)


def followup_step(name: str, op: str, tag: str, amount_of: Callable[[Amounts], Decimal] | None,
                  original_of: Callable[[ScenarioRun], str] = lambda run: run.state["original"],
                  ) -> Step:
    """A follow-up of ``original_of(run)`` through walletctl's own path: lookup + pre-flight,
    then send; Approved."""

    def action(run: ScenarioRun) -> str:
        target = run.target
        original = original_of(run)
        new_ref = run.ref(tag, f"{KIND_OF_OP[op]} of {original}")
        amount = amount_of(_amounts(run)) if amount_of else None
        plan = _plan_followup(run, op, original, amount, new_ref)
        response = target.client.followup(plan.request)
        check_equal(response.state, APPROVED, f"state of the {KIND_OF_OP[op]} {new_ref}")
        if response.client_system_transaction_id is not None:
            check_equal(response.client_system_transaction_id, new_ref,
                        f"clientSystemTransactionId of the {KIND_OF_OP[op]} answer")
        return f"{KIND_OF_OP[op]} of {_money(run, plan.request.amount)}: {response.state}"

    return Step(name, action, NEEDS_FOLLOWUP)


def _balance(run: ScenarioRun) -> tuple[Balance, list[TransactionRecord]]:
    target = run.target
    ref = run.state["original"]
    records = target.client.lookup(ref)
    try:
        return balance_from_records(ref, records), records
    except RefusedError as exc:
        raise StepFailed(f"lookup of {ref}: {exc.message}") from None


def totals_step(*, authorised: Callable[[Amounts], Decimal],
                captured: Callable[[Amounts], Decimal], refunded: Callable[[Amounts], Decimal],
                reversed_: bool = False, name: str = "lookup totals") -> Step:
    def action(run: ScenarioRun) -> str:
        amounts = _amounts(run)
        ref = run.state["original"]
        balance, records = _balance(run)
        check_equal(balance.state, APPROVED, f"state of {ref}")
        for what, expected, actual in (
            ("authorised", authorised(amounts), balance.authorised),
            ("captured", captured(amounts), balance.captured),
            ("refunded", refunded(amounts), balance.refunded),
        ):
            if actual != expected:
                raise StepFailed(f"{what} total of {ref}: expected {_money(run, expected)}, got "
                                 f"{_money(run, actual)} ({balance.summary()})")
        check_equal(balance.reversed, reversed_, f"reversed flag of {ref}")
        followups = [r for r in run.result.references if r != ref]
        by_ref = {r.client_system_transaction_id: r for r in records}
        for fref in followups:
            if fref in run.state.get("refused", set()):
                rec = by_ref.get(fref)
                check(rec is None or rec.state != APPROVED,
                      f"{fref} was refused by the gateway but its record is {APPROVED}")
            else:
                check(fref in by_ref, f"lookup of {ref} has no record for {fref}")
                check_equal(by_ref[fref].state, APPROVED, f"state of {fref}")
        return f"{balance.summary()} ({len(records)} records)"

    return Step(name, action, NEEDS_LOOKUP)


def refusal_step(name: str, op: str, tag: str,
                 amount_of: Callable[[Amounts, Balance], Decimal]) -> Step:
    """Both walletctl's pre-flight AND the gateway itself must refuse this follow-up."""

    def action(run: ScenarioRun) -> str:
        from walletctl.ops.redirect import make_followup_request

        target = run.target
        original = run.state["original"]
        balance, _ = _balance(run)
        amount = amount_of(_amounts(run), balance)
        new_ref = run.ref(tag, f"refused {KIND_OF_OP[op]} of {original}")
        try:
            _plan_followup(run, op, original, amount, new_ref)
        except RefusedError:
            pass  # walletctl would not send it: good; now prove the gateway refuses it too
        else:
            raise StepFailed(f"walletctl's pre-flight accepted a {KIND_OF_OP[op]} of "
                             f"{_money(run, amount)} on {original} ({balance.summary()})")
        request = make_followup_request(target.profile, op, original,  # type: ignore[arg-type]
                                        new_ref, amount, target.currency)
        run.state.setdefault("refused", set()).add(new_ref)
        refused = (f"{KIND_OF_OP[op]} of {_money(run, amount)} refused by the pre-flight and by "
                   "the gateway")
        try:
            response = target.client.followup(request)
        except GatewayError as exc:
            if exc.status in (401, 403):
                raise
            check(exc.status == 422, f"expected the gateway to refuse the {KIND_OF_OP[op]} with "
                                     f"HTTP 422, got: {exc.message}")
            code = f", code {exc.code}" if exc.code else ""
            return f"{refused} (HTTP {exc.status}{code})"
        check(response.state != APPROVED,
              f"the gateway ACCEPTED a {KIND_OF_OP[op]} of {_money(run, amount)} on {original} "
              f"({balance.summary()}): {new_ref} is {response.state}")
        return f"{refused} (state {response.state})"

    return Step(name, action, NEEDS_REFUSAL)


# -- the browser wallet ------------------------------------------------------------------------

# The sandbox's emulated wallet cards used here (GET /_sandbox/wallet/cards lists them all).
TOKEN_CARD = "visa-token"  # noqa: S105 - a card id. CRYPTOGRAM_3DS -> cardType Token
PAN_CARD = "visa-pan"  # PAN_ONLY -> cardType Card, needs 3DS
CREDENTIALS = {"sale": (TOKEN_CARD, "Token"), "preauth": (PAN_CARD, "Card")}


def _json(response: Any, what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise StepFailed(f"{what} answered HTTP {response.status_code} with no JSON") from None


def public_keys(run: ScenarioRun) -> str:
    from walletctl.ops.walletpay import fetch_keys

    target = run.target
    keys = fetch_keys(target.client)
    target.masker.add(keys.api_key.get_secret_value())
    target.masker.add(keys.encryption_key.get_secret_value())
    check(bool(keys.api_key.get_secret_value()), "the public key service returned no apiKey")
    check(bool(keys.encryption_key.get_secret_value()),
          "the public key service returned no encryptionKey")
    run.state["keys"] = keys
    expiry = f", expires {keys.expires_at}" if keys.expires_at else ""
    return f"API key and encryption key {keys.encryption_key_id} issued{expiry}"


def wallet_tokens(run: ScenarioRun) -> str:
    target = run.target
    if not target.is_walletctl_sandbox():
        raise StepSkipped("a wallet token comes from the wallet provider in a browser; only the "
                          "walletctl sandbox can mint one headlessly (POST /_sandbox/wallet/token)")
    keys = run.state["keys"]
    tokens: dict[str, Any] = {}
    for kind, (card, _) in CREDENTIALS.items():
        response = target.admin.send("POST", WALLET_TOKEN, json_body={
            "cardId": card, "gatewayMerchantId": target.profile.merchant_id,
            "publicKeyApi": keys.api_key.get_secret_value()})
        data = _json(response, "the emulated wallet")
        check_equal(response.status_code, 200, f"emulated wallet answer for card {card}")
        pmd = data.get("paymentMethodData") if isinstance(data, dict) else None
        tokenization = pmd.get("tokenizationData") if isinstance(pmd, dict) else None
        check(isinstance(tokenization, dict) and bool(tokenization.get("token")),
              f"the emulated wallet returned no token for card {card}")
        tokens[kind] = pmd
    run.state["tokens"] = tokens
    return f"wallet tokens minted for {TOKEN_CARD} (CRYPTOGRAM_3DS) and {PAN_CARD} (PAN_ONLY)"


def create_accounts(run: ScenarioRun) -> str:
    from walletctl.models.walletpay import PaymentAccount

    target = run.target
    profile = target.profile
    api_key = run.state["keys"].api_key.get_secret_value()
    created: dict[str, dict[str, Any]] = {}
    for kind, (card, card_type) in CREDENTIALS.items():
        ref = run.ref(f"w{kind}", f"browser-wallet {kind}")
        data = target.client.request("POST", "payment_accounts", json={
            "merchantId": profile.merchant_id, "storeId": profile.store_id,
            "clientSystemTransactionId": ref,
            "paymentData": {"apiVersion": 2, "apiVersionMinor": 0,
                            "paymentMethodData": run.state["tokens"][kind]},
        }, reference=ref, auth=("Authorization", f"PublicApiKey {api_key}"))
        check(isinstance(data, dict), "Create Payment Account did not answer a JSON object")
        target.masker.add_from(data)
        account = PaymentAccount.from_wire(data)
        check_equal(account.card_type, card_type, f"cardType of the {card} account")
        if card_type == "Token":
            check(bool(data.get("cryptogram")) and bool(data.get("eciIndicator")),
                  "a Token account came back without cryptogram + eciIndicator")
        created[kind] = {"id": account.transaction_account_id, "ref": ref,
                         "cryptogram": data.get("cryptogram"), "eci": data.get("eciIndicator")}
    run.state["accounts"] = created
    return "payment accounts created: " + ", ".join(
        f"{kind} {info['id']}" for kind, info in created.items())


def get_accounts(run: ScenarioRun) -> str:
    from walletctl.ops.walletpay import get_account

    target = run.target
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
        for a in fetched.values())


def _authorize(run: ScenarioRun, kind: str) -> str:
    from walletctl.models.walletpay import ThreeDSecure
    from walletctl.ops.walletpay import (
        build_authorization,
        prepare_authorization,
        send_authorization,
    )

    target = run.target
    info = run.state["accounts"][kind]
    account = run.state["fetched"][kind]
    amounts = _amounts(run)
    amount = amounts.wallet_sale if kind == "sale" else amounts.wallet_preauth
    three_ds = None
    if account.card_type == "Card":
        response = target.admin.send("POST", THREE_DS_CHALLENGE, json_body={
            "transactionAccountId": info["id"], "merchantId": target.profile.merchant_id,
            "storeId": target.profile.store_id})
        data = _json(response, "the 3DS challenge")
        check_equal(response.status_code, 200, "3DS challenge status")
        target.masker.add_from(data)
        target.masker.add(data.get("authenticationValue"))
        three_ds = ThreeDSecure.from_wire(
            {k: v for k, v in data.items() if str(k).lower() != "transstatus"})
    request = build_authorization(
        target.profile, account, amount=amount, currency=target.currency, reference=info["ref"],
        kind=kind, key_id=run.state["keys"].encryption_key_id, cryptogram=info["cryptogram"],
        eci=info["eci"], three_ds=three_ds)
    result = send_authorization(target.client, prepare_authorization(target.client, request))
    check_equal(result.state, APPROVED, f"state of the {kind} authorization {info['ref']}")
    if result.amount is not None:
        check_equal(result.amount, amount, f"amount of the {kind} authorization")
    how = "cryptogram" if account.card_type == "Token" else "3DS"
    return f"{kind} of {_money(run, amount)} on a {account.card_type} account ({how}): " \
        + result.state


def lookup(run: ScenarioRun) -> str:
    target = run.target
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


def wallet_steps() -> tuple[Step, ...]:
    return (Step("public keys", public_keys, NEEDS_KEYS),
            Step("wallet tokens", wallet_tokens, NEEDS_WALLET),
            Step("create payment accounts", create_accounts, NEEDS_WALLET),
            Step("get payment accounts", get_accounts, NEEDS_KEYS),
            Step("authorize sale", partial(_authorize, kind="sale"), NEEDS_AUTHORIZE),
            Step("authorize pre-authorisation", partial(_authorize, kind="preauth"),
                 NEEDS_AUTHORIZE),
            followup_step("capture", "capture", "wcap", lambda a: a.wallet_preauth,
                          lambda run: run.state["accounts"]["preauth"]["ref"]),
            Step("lookup", lookup, NEEDS_LOOKUP))


def _no_service_secret(ctx: RunContext) -> str | None:
    """A profile from the environment without $WALLETCTL_SERVICE_SECRET: the public key
    service's secret is optional there, so the scenario that needs it is not run (a file's
    profile sends its API key in its place, as `walletctl keys` does)."""
    from walletctl.config.env_profile import is_env
    from walletctl.constants import Env

    target = ctx.target
    if target is None or not is_env(target.profile) or target.profile.auth.has_service_secret:
        return None
    return (f"not run: the profile from the environment has no public key service secret "
            f"(set {Env.SERVICE_SECRET})")


# -- the catalogue -----------------------------------------------------------------------------

def _unit(currency: str) -> Decimal:
    """The smallest amount of ``currency`` (0.01 EUR, 1 JPY): one past a limit."""
    return Decimal(1).scaleb(-exponent(currency))


_Z = Decimal(0)
SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("redirect-sale", "sale",
             "Redirect-wallet sale: checkout -> approve -> lookup Approved",
             (checkout_step("co", "sale", lambda a: a.sale), approve_step(),
              lookup_approved_step("sale"))),
    Scenario("preauth-capture-refund", "pcr",
             "Pre-authorisation -> partial capture -> second capture -> partial refund -> "
             "lookup totals",
             (checkout_step("auth", "preauth", lambda a: a.preauth), approve_step(),
              lookup_approved_step("preauth"),
              followup_step("partial capture", "capture", "cap1", lambda a: a.capture1),
              followup_step("second capture", "capture", "cap2", lambda a: a.capture2),
              followup_step("partial refund", "refund", "ref1", lambda a: a.refund),
              totals_step(authorised=lambda a: a.preauth,
                          captured=lambda a: a.capture1 + a.capture2,
                          refunded=lambda a: a.refund))),
    Scenario("preauth-reversal", "rev",
             "Pre-authorisation -> reversal -> lookup shows it reversed",
             (checkout_step("auth", "preauth", lambda a: a.reversal_preauth), approve_step(),
              lookup_approved_step("preauth"),
              followup_step("reversal", "reverse", "rev1", None),
              totals_step(authorised=lambda a: a.reversal_preauth, captured=lambda a: _Z,
                          refunded=lambda a: _Z, reversed_=True))),
    Scenario("refusals", "rfs",
             "Over-capture, over-refund and reversal after capture are refused (by "
             "walletctl's pre-flight and by the gateway)",
             (checkout_step("auth", "preauth", lambda a: a.refusal_preauth), approve_step(),
              refusal_step("over-capture refused", "capture", "ocap",
                           lambda a, b: b.capturable + _unit(b.currency)),
              followup_step("capture in full", "capture", "cap1", lambda a: a.refusal_preauth),
              refusal_step("over-refund refused", "refund", "oref",
                           lambda a, b: b.refundable + _unit(b.currency)),
              refusal_step("reversal after capture refused", "reverse", "orev",
                           lambda a, b: b.authorised),
              totals_step(authorised=lambda a: a.refusal_preauth,
                          captured=lambda a: a.refusal_preauth, refunded=lambda a: _Z,
                          name="lookup unchanged"))),
    Scenario("browser-wallet", "wp",
             "Browser wallet: keys -> payment account (create API) -> account -> authorize "
             "sale and pre-authorisation -> capture -> lookup", wallet_steps(),
             unavailable=_no_service_secret),
)}


def select(names: list[str]) -> list[Scenario]:
    """The scenarios named (in catalogue order, each once); all of them when none is named."""
    if not names:
        return list(SCENARIOS.values())
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise UsageError(f"--scenario: unknown scenario {unknown[0]!r}; choose from "
                         + ", ".join(SCENARIOS), hint="`walletctl smoke --list` describes them")
    wanted = set(names)
    return [s for s in SCENARIOS.values() if s.name in wanted]


def describe() -> list[dict[str, Any]]:
    return [{"name": s.name, "description": s.description, "steps": [st.name for st in s.steps]}
            for s in SCENARIOS.values()]
