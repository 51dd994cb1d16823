"""Browser wallet operations: ``keys`` (public key service), ``account``, ``authorize``
(docs/walletpay.md). Key cache: ``<user cache dir>/walletctl/keys/<profile>-<hash>.json``
(0600), one per profile, base URL, merchant and store, reused until 60 s before the key's
``expiresAt``; it holds the API key and the encryption key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import ValidationError

from walletctl.client.gateway import check_echo, parse_model
from walletctl.constants import Env
from walletctl.errors import (
    DeclinedError,
    GatewayError,
    RefusedError,
    RequestValidationError,
    UnknownOutcomeError,
    UsageError,
    WalletctlError,
)
from walletctl.models.base import validation_problems
from walletctl.models.inputs import check_identifier
from walletctl.models.outcome import Planned, exit_of, history_outcome
from walletctl.models.walletpay import (
    AUTH_TYPES,
    AuthorizationRequest,
    AuthorizationResponse,
    GatewayErrorObject,
    PaymentAccount,
    PaymentResult,
    PublicKeys,
    ThreeDSecure,
    parse_event_detail,
)
from walletctl.ops.money.movements import UnderItsOwnReference
from walletctl.ops.money.pipeline import Ask, Desk, Moved, move

if TYPE_CHECKING:
    from collections.abc import Callable

    from walletctl.client.gateway import GatewayClient, PreparedCall
    from walletctl.config.profile import Profile
    from walletctl.history.recorder import Recording
    from walletctl.history.store import HistoryStore
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.money.earlier import Judged

CACHE_MARGIN = timedelta(seconds=60)


# -- keys --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeysResult:
    keys: PublicKeys
    source: str  # "gateway" | "cache"
    cache_path: Path | None = None
    saved: tuple[str, ...] = ()
    cache_error: str | None = None  # the keys were fetched, but could not be cached
    # --save: the profile's own source of the API key that still wins over the saved one
    # (``inline key``, ``env NAME``, ``file PATH``), None when the saved key is the one used
    saved_key_loses_to: str | None = None


def cache_path(profile: Profile) -> Path:
    from platformdirs import user_cache_dir

    ident = f"{profile.base_url}|{profile.merchant_id}|{profile.store_id}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in profile.name)
    return Path(user_cache_dir("walletctl")) / "keys" / f"{safe}-{digest}.json"


def parse_expiry(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def cached_keys(profile: Profile, now: datetime | None = None) -> PublicKeys | None:
    """The unexpired cached keys of ``profile``, if any (no network)."""
    try:
        keys = PublicKeys.from_wire(json.loads(cache_path(profile).read_text(encoding="utf-8")))
    except (OSError, ValueError, RequestValidationError):
        return None
    expiry = parse_expiry(keys.expires_at)
    if expiry is None or expiry - CACHE_MARGIN <= (now or datetime.now(UTC)):
        return None
    return keys


def _write_cache(path: Path, keys: PublicKeys) -> None:
    from walletctl.config.profiles_file import write_private

    write_private(path, json.dumps({
        "apiKey": keys.api_key.get_secret_value(),
        "encryptionKey": keys.encryption_key.get_secret_value(),
        "encryptionKeyId": keys.encryption_key_id, "expiresAt": keys.expires_at}).encode())


def fetch_keys(client: GatewayClient) -> PublicKeys:
    from walletctl.config.secrets import service_basic_auth
    from walletctl.errors import AuthError

    profile = client.profile
    auth = service_basic_auth(profile)
    try:
        data = client.send(client.prepare(
            "POST", "public_keys",
            json={"merchantId": profile.merchant_id, "storeId": profile.store_id},
            auth=auth if auth is not None else False))
    except AuthError as exc:
        exc.hint = service_secret_hint(client.profile)
        raise
    keys: PublicKeys = parse_model(PublicKeys, data, client.profile, "public key service")
    return keys


def service_secret_hint(profile: Profile) -> str:
    """What a 401 from the public key service means, and the command that fixes it."""
    auth = profile.auth
    user = auth.username or profile.user_id
    if auth.service_secret_env:
        used = f"the service secret from ${auth.service_secret_env}"
    elif auth.service_secret_file:
        used = f"the service secret in {auth.service_secret_file}"
    elif auth.service_secret:
        used = "the profile's service secret"
    else:
        used = "the API key as its service secret (the profile sets none)"
    from walletctl.config.env_profile import is_env

    if is_env(profile):  # no file to `profile set`: the variable is the source
        fix = (f"set {Env.SERVICE_SECRET} to the service's secret (the profile comes from "
               "the environment)")
    else:
        fix = (f"set the service secret's source: `walletctl profile set {profile.name} "
               "auth.service_secret_env VAR`")
    return (f"the public key service refused user {user!r} with {used}; {fix} (a walletctl "
            "sandbox's: `walletctl sandbox values`)")


def get_keys(client: GatewayClient, *, refresh: bool = False, save: bool = False,
             now: datetime | None = None) -> KeysResult:
    """Cached keys when still valid (unless ``refresh``), else fresh ones from the gateway."""
    profile = client.profile
    path = cache_path(profile)
    keys = None if refresh else cached_keys(profile, now)
    source = "cache"
    cache_error = None
    if keys is None:
        keys = fetch_keys(client)
        source = "gateway"
        if parse_expiry(keys.expires_at) is not None:
            try:
                _write_cache(path, keys)
            except OSError as exc:  # the cache is an optimisation: warn, do not fail
                cache_error = f"cannot write the key cache {path}: " + (
                    exc.strerror or type(exc).__name__)
    saved: tuple[str, ...] = ()
    if save:
        from walletctl.config.secrets import save_secret

        saved = (
            "API key -> " + save_secret(profile, "key", keys.api_key),
            "encryption key -> " + save_secret(profile, "encryption_key", keys.encryption_key),
        )
    return KeysResult(keys=keys, source=source, cache_path=path, saved=saved,
                      cache_error=cache_error,
                      saved_key_loses_to=_winning_source(profile) if save else None)


def _winning_source(profile: Profile) -> str | None:
    """After ``--save``: the profile's source of the API key that is used instead of the
    saved one (the resolution order: key_env, key_file, keyring, inline key, saved file)."""
    from walletctl.config.secrets import resolve_secret_with_source
    from walletctl.errors import ConfigError

    try:
        _, source = resolve_secret_with_source(profile)
    except ConfigError:
        return None
    saved_here = "keyring " if profile.auth.keyring else "saved file "
    return None if source.startswith(saved_here) else source


# -- event.detail ------------------------------------------------------------------------------


def read_event(path: Path) -> PaymentResult:
    """A posted ``event.detail`` (file or ``-``); a gateway error object is refused."""
    from walletctl.ops.user_files import read_document

    data = read_document(path, "--event")
    detail = parse_event_detail(data)
    if isinstance(detail, GatewayErrorObject):
        message = detail.details.message if detail.details else None
        raise RefusedError(
            f"event.detail is a gateway error, not a payment: {detail.code}"
            + (f" {detail.description}" if detail.description else "")
            + (f" — {message}" if message else ""),
            hint="the wallet payment failed; nothing to authorize",
        )
    return detail


def resolve_key_id(profile: Profile, explicit: str | None) -> str:
    if explicit:
        return explicit
    keys = cached_keys(profile)
    if keys is not None:
        return keys.encryption_key_id
    raise UsageError(
        "--encryption-key-id is required (the key id the payment account was made with)",
        hint="pass --encryption-key-id, or run `walletctl keys` for this profile first",
    )


# -- Get Payment Account -----------------------------------------------------------------------


def get_account(client: GatewayClient, account_id: str, key_id: str) -> PaymentAccount:
    check_identifier(account_id, "transactionAccountId", max_length=255)
    check_identifier(key_id, "--encryption-key-id", max_length=255)
    profile = client.profile
    try:
        data = client.send(client.prepare(
            "GET", "payment_accounts", path_suffix="/" + quote(account_id, safe=""),
            params={"merchantId": profile.merchant_id, "storeId": profile.store_id,
                    "encryptionKeyId": key_id}))
    except GatewayError as exc:
        if "EncryptionKeyMismatch" in (exc.code, exc.description):
            exc.hint = ("the payment account was made with another encryption key (e.g. before "
                        "`keys --refresh`): pass the encryptionKeyId your merchant server "
                        "stored for it with --encryption-key-id")
        raise
    account: PaymentAccount = parse_model(PaymentAccount, data, client.profile,
                                          "payment account")
    return account


# -- authorization -----------------------------------------------------------------------------


def build_authorization(profile: Profile, account: PaymentAccount, *, amount: Decimal,
                        currency: str, reference: str, kind: str, key_id: str | None,
                        cryptogram: str | None = None, eci: str | None = None,
                        three_ds: ThreeDSecure | None = None) -> AuthorizationRequest:
    """The authorization for ``account``; refuses what the gateway would (nothing sent): a
    ``Token`` account needs cryptogram + ECI, a ``Card`` (PAN_ONLY) account 3DS data."""
    auth_type = AUTH_TYPES.get(kind)
    if auth_type is None:
        raise RequestValidationError([("--type", "must be sale or preauth")])
    if account.card_type == "Token":
        missing = [n for n, v in (("cryptogram", cryptogram), ("eciIndicator", eci)) if not v]
        if missing:
            raise RequestValidationError(
                [(m, "is required for a Token (CRYPTOGRAM_3DS) payment account") for m in missing],
                hint="pass --event with the posted event.detail (or --cryptogram and --eci)",
            )
        three_ds = None
    else:
        if three_ds is None:
            raise RequestValidationError(
                [("threeDSecure", "is required for a Card (PAN_ONLY) payment account")],
                hint="run the 3DS step and pass its result with --3ds FILE (sandbox: "
                "`walletctl sandbox 3ds ACCOUNT | walletctl authorize --3ds - ...`)",
            )
        cryptogram = eci = None
    try:
        return AuthorizationRequest(
            merchant_id=profile.merchant_id, store_id=profile.store_id, user_id=profile.user_id,
            type=auth_type, amount=amount, currency_code=currency,
            client_system_transaction_id=reference,
            transaction_account_id=account.transaction_account_id, encryption_key_id=key_id,
            cryptogram=cryptogram, eci_indicator=eci, three_d_secure=three_ds,
        )
    except ValidationError as exc:
        raise RequestValidationError(validation_problems(exc)) from None


def read_three_ds(path: Path) -> tuple[ThreeDSecure, str | None]:
    """``--3ds FILE|-``: JSON ``{threeDSServerTransId, authenticationValue, eci}``, as the
    sandbox's challenge answers (``transStatus`` is read past) or as ``walletctl sandbox
    3ds`` prints it (with ``transactionAccountId``: the account it was run for, returned)."""
    from walletctl.ops.user_files import read_document

    data: Any = read_document(path, "--3ds")
    account_id = None
    if isinstance(data, dict):
        account = next((v for k, v in data.items()
                        if str(k).lower() == "transactionaccountid"), None)
        if account is not None and not isinstance(account, str):
            raise RequestValidationError([("--3ds: transactionAccountId", "must be a string")])
        account_id = account or None
        data = {k: v for k, v in data.items()
                if str(k).lower() not in ("transstatus", "transactionaccountid")}
    return ThreeDSecure.from_wire(data), account_id


def prepare_authorization(client: GatewayClient, req: AuthorizationRequest) -> PreparedCall:
    return client.prepare("POST", "transactions", json=req.to_wire(client.profile.amount_format),
                          reference=req.client_system_transaction_id, moves_money=True)


def send_authorization(
    client: GatewayClient, call: PreparedCall, req: AuthorizationRequest | None = None
) -> AuthorizationResponse:
    data = client.send(call)
    if req is not None:  # an answer naming another reference/amount is no success
        check_echo(data, reference=req.client_system_transaction_id, amount=req.amount,
                   currency=req.currency_code, operation=req.type,
                   fmt=client.profile.amount_format)
    response: AuthorizationResponse = parse_model(AuthorizationResponse, data, client.profile,
                                                  "authorization")
    return response


@dataclass(frozen=True)
class AuthorizeInput:
    """``walletctl authorize``'s options, as typed."""

    account_id: str | None = None
    event: Path | None = None
    three_ds: Path | None = None
    amount: str | None = None
    currency: str | None = None
    ref: str | None = None
    kind: str = "sale"
    cryptogram: str | None = None
    eci: str | None = None
    encryption_key_id: str | None = None


def authorization_from(load_profile: Callable[[], Profile],
                       given: AuthorizeInput) -> Authorization:
    """The authorization the options, the event file and the 3DS result describe, checked
    against each other before anything is touched (the profile is loaded after the options:
    a usage error comes first, as Click's own)."""
    from walletctl.errors import missing_options
    from walletctl.models.inputs import check_inputs
    detail, tds, account_id = _sources(given)
    reference = given.ref or (detail.client_system_transaction_id if detail else None)
    if not (account_id and reference and given.amount):
        raise missing_options("authorize", [(flag, rule) for flag, rule, value in (
            ("--account", "required: the transactionAccountId, or --event FILE or --3ds FILE "
                          "naming it", account_id),
            ("--ref", "required: the new transaction's clientSystemTransactionId", reference),
            ("--amount", "required: the amount in major units, e.g. 12.34", given.amount),
        ) if not value])
    check_inputs(references={"--ref (clientSystemTransactionId)": reference},
                 amounts={"--amount": given.amount}, currencies={"--currency": given.currency})
    profile = load_profile()
    amount, currency = _money(profile, given.amount, given.currency)
    return Authorization(
        account_id=account_id, key_id=resolve_key_id(profile, given.encryption_key_id),
        reference=reference, amount=amount, currency=currency, kind=given.kind,
        cryptogram=given.cryptogram or (detail.cryptogram if detail else None),
        eci=given.eci or (detail.eci_indicator if detail else None),
        three_ds=tds)


def _sources(given: AuthorizeInput) -> tuple[PaymentResult | None, ThreeDSecure | None,
                                             str | None]:
    """The event and the 3DS result read, and the account they and ``--account`` agree on."""
    if given.event is not None and str(given.event) == str(given.three_ds) == "-":
        raise UsageError("--event - and --3ds - cannot both read stdin")
    detail = read_event(given.event) if given.event is not None else None
    if detail is not None and given.account_id and \
            given.account_id != detail.transaction_account_id:
        raise UsageError("--account differs from the event's transactionAccountId")
    tds, tds_account = read_three_ds(given.three_ds) if given.three_ds is not None else (
        None, None)
    account_id = given.account_id or (detail.transaction_account_id if detail else None)
    if tds_account is not None:
        if account_id and account_id != tds_account:
            raise UsageError("--3ds was run for another account than "
                             + ("--account" if given.account_id else "the event's"),
                             hint="run `walletctl sandbox 3ds` for the account you charge")
        account_id = tds_account
    return detail, tds, account_id


def _money(profile: Profile, amount: str, currency: str | None) -> tuple[Decimal, str]:
    """``--amount`` (checked greater than zero) in ``--currency`` (default: the profile's)."""
    from walletctl.errors import missing_options
    from walletctl.models.money import parse_major
    from walletctl.ops.redirect import checked_currency

    if not (currency or profile.currency):
        raise missing_options(
            "authorize", [("--currency", f"required: profile {profile.name!r} has no default "
                                         "currency")],
            hint=f'pass --currency EUR, or set currency = "EUR" under [profiles.{profile.name}]')
    code = checked_currency(currency or profile.currency) or ""
    try:
        return parse_major(amount, code), code
    except ValueError as exc:
        raise RequestValidationError([("--amount", str(exc))]) from None


# -- the authorization through the money pipeline ----------------------------------------------
@dataclass(frozen=True)
class AuthorizationPlan:
    account: PaymentAccount
    request: AuthorizationRequest
    call: PreparedCall


@dataclass(frozen=True)
class Authorization(UnderItsOwnReference):
    """``ecom.sale`` / ``ecom.preauthorization`` of a payment account under ``reference``."""

    account_id: str
    key_id: str
    reference: str
    amount: Decimal
    currency: str
    kind: str = "sale"
    cryptogram: str | None = None
    eci: str | None = None
    three_ds: ThreeDSecure | None = None
    op = "authorize"

    def plan(self, client: GatewayClient, store: HistoryStore | None,
             records: list[TransactionRecord], same: Judged | None,
             rec: Recording) -> AuthorizationPlan:
        rec.planned(self.reference, self.amount, self.currency)
        account = get_account(client, self.account_id, self.key_id)
        request = build_authorization(
            client.profile, account, amount=self.amount, currency=self.currency,
            reference=self.reference, kind=self.kind, key_id=self.key_id,
            cryptogram=self.cryptogram, eci=self.eci, three_ds=self.three_ds)
        return AuthorizationPlan(account, request, prepare_authorization(client, request))

    def planned(self, plan: AuthorizationPlan) -> Planned:
        return Planned("authorize", self.reference, self.reference, self.amount, self.currency)

    def send(self, client: GatewayClient, plan: AuthorizationPlan,
             rec: Recording) -> AuthorizationResponse:
        response = send_authorization(client, plan.call, plan.request)
        rec.answered(response.state)
        return response

    def own_reference(self) -> str:
        return self.reference


def authorize(client: GatewayClient, store: HistoryStore | None, movement: Authorization,
              ask: Ask, desk: Desk[AuthorizationPlan]
              ) -> Moved[AuthorizationPlan, AuthorizationResponse]:
    """One authorization through the money pipeline, with its exit decided once from the
    outcome the history records for the answer (:func:`~walletctl.models.outcome.exit_of`):
    Approved 0; Pending, accepted and not done, an outcome still to look up (exit 8), as is a
    state the protocol does not know; a stated refusal exit 5. ``failure``: why, raised by the
    command once the answer is shown."""
    moved = move(client, store, movement, ask, desk)
    response, reference = moved.answer, movement.reference
    if response is None:  # a dry run, or an earlier authorization found: nothing sent now
        return moved
    outcome = history_outcome(response.state, movement.op)
    exit_code = exit_of(outcome)
    failure: WalletctlError | None = None
    if outcome == "unknown":
        failure = UnknownOutcomeError(reference, "the gateway answered Pending: not done yet"
                                      if response.state == "Pending" else
                                      f"the gateway answered state {response.state!r}: not "
                                      "known to be done or refused")
    elif outcome == "declined":
        failure = DeclinedError(
            f"authorization {reference} was not approved: {response.state}"
            + (f" ({response.provider_state_code})" if response.provider_state_code else ""))
    if failure is not None:
        failure.exit_code = exit_code  # the one exit: what the history records
    return replace(moved, exit_code=int(exit_code), failure=failure)
