"""The redirect wallet's requests: a checkout built from the profile, a request file and
flags; a capture/refund/reversal planned against the original's records (the pre-flight) with
its derived reference. No Typer, no printing, no sending: the money pipeline sends
(:mod:`walletctl.ops.money.pipeline`); ``smoke`` and the demo share these."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic.alias_generators import to_camel

from walletctl.config.profile import NEEDED_REDIRECTS, REDIRECT_KEYS
from walletctl.constants import APM_PROVIDER
from walletctl.errors import ConfigError, RequestValidationError, missing_options
from walletctl.models.checkout import CheckoutRequest
from walletctl.models.fields import REFERENCE_MAX
from walletctl.models.followup import OPERATION_TYPES, FollowUpRequest, Operation
from walletctl.models.ledger import (
    KIND_OF_OP,
    Balance,
    balance_from_records,
    check_followup,
    kind_of,
)
from walletctl.models.money import check_currency, parse_major
from walletctl.models.operations import TAG_OF
from walletctl.models.records import TransactionRecord

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile

# a profile's [redirects] key -> its name in the checkout's redirectDetails
_WIRE_NAMES = {key: to_camel(key) for key in REDIRECT_KEYS}


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``a.b.c`` in nested dicts, matching existing keys case-insensitively."""
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        key = _find_key(node, part)
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[_find_key(node, parts[-1])] = value


def get_path(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(_find_key(node, part))
    return node


def _find_key(node: Mapping[str, Any], name: str) -> str:
    for key in node:
        if isinstance(key, str) and key.lower() == name.lower():
            return key
    return name


def build_checkout_request(profile: Profile, base: Mapping[str, Any] | None = None,
                           overrides: Mapping[str, Any] | None = None) -> CheckoutRequest:
    """Profile defaults <- request file (``base``) <- flags (``overrides``, dotted paths).

    Amounts in ``base``/``overrides`` are major units (``"12.34"``), whatever the wire format.
    """
    data: dict[str, Any] = copy.deepcopy(dict(base or {}))
    # The ids always come from the profile: lookups and follow-ups use the profile's, so a
    # request file naming another merchant or store would create a checkout walletctl could
    # not follow up. A file may repeat the profile's ids; a different one is refused.
    for path, value in (
        ("merchantId", profile.merchant_id),
        ("storeId", profile.store_id),
        ("userId", profile.user_id),
    ):
        given = get_path(data, path)
        if given is not None and given != value:
            raise RequestValidationError(
                [(path, f"{given!r} in the request file differs from profile {profile.name}'s "
                        f"{value!r}; select that merchant's profile with -p instead")]
            )
        set_path(data, path, value)
    if get_path(data, "checkoutDetails.paymentMethod") is None:
        set_path(data, "checkoutDetails.paymentMethod", APM_PROVIDER)
    if get_path(data, "currencyCode") is None and profile.currency:
        set_path(data, "currencyCode", profile.currency)
    for key, alias in _WIRE_NAMES.items():
        if key in profile.redirects and get_path(data, f"redirectDetails.{alias}") is None:
            set_path(data, f"redirectDetails.{alias}", profile.redirects[key])
    for path, value in (overrides or {}).items():
        if value is not None:
            set_path(data, path, value)
    _refuse_floats(data, "")
    return CheckoutRequest.from_wire(data)



# What a checkout cannot do without: by flag, the request key and what it is. The currency
# and the redirect URLs may also come from the profile.
_REQUIRED = {
    "--amount": ("amount", "required: the amount in major units, e.g. 12.34"),
    "--ref": ("clientSystemTransactionId",
              "required: your unique reference, the clientSystemTransactionId"),
}


def checkout_request(load_profile: Callable[[], Profile], base: dict[str, Any] | None,
                     overrides: dict[str, Any], *,
                     from_file: Path | None = None) -> tuple[Profile, CheckoutRequest]:
    """The selected profile and the checkout request the flags (``overrides``), the request
    file (``base``) and the profile make; a required value given nowhere is a usage error
    naming the flag (exit 2), or with ``--from-file`` the file's (exit 4)."""
    def absent(key: str) -> bool:
        return overrides.get(key) is None and (base is None or get_path(base, key) is None)

    # (flags, their request keys, the rule)
    missing = [([flag], [key], rule) for flag, (key, rule) in _REQUIRED.items() if absent(key)]
    try:
        profile = load_profile()
    except ConfigError:
        if not missing:  # the usage error first, as Click reports it before any profile
            raise
        profile = None
    hints = [] if profile is None else _missing_from_profile(profile, absent, missing)
    hint = "; ".join(hints) or None
    if missing and base is None:
        raise missing_options("checkout", [(", ".join(flags), rule)
                                           for flags, _, rule in missing], hint=hint)
    if missing:
        raise RequestValidationError(
            [(key, f"is required: give it in --from-file {from_file} or pass {flag}")
             for flags, keys, _ in missing for flag, key in zip(flags, keys, strict=True)],
            hint=hint)
    assert profile is not None  # loaded, or its ConfigError was raised
    return profile, build_checkout_request(profile, base, overrides)


def _missing_from_profile(profile: Profile, absent: Callable[[str], bool],
                          missing: list[tuple[list[str], list[str], str]]) -> list[str]:
    """What neither the flags, the file nor ``profile`` give (the currency, the redirect
    URLs), added to ``missing``; the hints that say where to set them."""
    from walletctl.config.env_profile import SETTING_VARS, is_env

    name, hints, from_env = profile.name, [], is_env(profile)
    if not profile.currency and absent("currencyCode"):
        missing.append((["--currency"], ["currencyCode"],
                        f"required: profile {name!r} has no default currency"))
        hints.append("pass --currency EUR, or " + (
            f"set {SETTING_VARS['currency']}=EUR" if from_env
            else f'set currency = "EUR" under [profiles.{name}]'))
    urls = [key for key in NEEDED_REDIRECTS if key not in profile.redirects
            and absent(f"redirectDetails.{_WIRE_NAMES[key]}")]
    if urls:
        missing.append((["--" + key.replace("_", "-") for key in urls],
                        [f"redirectDetails.{_WIRE_NAMES[key]}" for key in urls],
                        f"required: profile {name!r} has no [redirects] for them"
                        if len(urls) > 1 else
                        f"required: profile {name!r} has no [redirects] {urls[0]}"))
        if from_env:  # no file to `profile set`: the variables set them
            hints.append("pass the URLs, or set " + ", ".join(
                SETTING_VARS[f"redirects.{key}"] for key in urls)
                + " (the profile comes from the environment)")
        else:
            hints.append(f"pass the URLs, or store the shop's in the profile (its other "
                         f"settings kept): `walletctl profile set {name} redirects.{urls[0]} "
                         f"https://your-shop/...`" + (" (and " + ", ".join(
                             f"redirects.{key}" for key in urls[1:]) + ")" if urls[1:] else ""))
    return hints


def _refuse_floats(value: Any, path: str) -> None:
    if isinstance(value, float):
        raise RequestValidationError(
            [(path or "(request)", 'write amounts as strings ("12.34"), never as floats')]
        )
    if isinstance(value, Mapping):
        for k, v in value.items():
            _refuse_floats(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_floats(v, f"{path}[{i}]")


@dataclass(frozen=True)
class FollowUpPlan:
    op: Operation
    request: FollowUpRequest
    balance: Balance

    @property
    def remaining_after(self) -> Decimal:
        return self.balance.applied(self.op, self.request.amount).remaining(self.op)


def derive_reference(reference: str, op: Operation, sequence: int) -> str:
    """``ORDER-1`` + capture #2 -> ``ORDER-1-CAP2`` (shortened with a hash when too long).

    Within the reference rule for every valid ``reference``: it keeps the original's first
    character, ends in the tag, and counts code points (a cut never splits a character)."""
    suffix = f"-{TAG_OF[op]}{sequence}"
    if len(reference) + len(suffix) <= REFERENCE_MAX:
        return reference + suffix
    digest = hashlib.sha256(reference.encode("utf-8")).hexdigest()[:10]
    keep = REFERENCE_MAX - len(suffix) - len(digest) - 1
    return f"{reference[:keep]}-{digest}{suffix}"


def next_reference(reference: str, op: Operation, records: list[TransactionRecord],
                   reserved: frozenset[str] = frozenset()) -> str:
    """The first derived reference not already used by a record of this lookup, nor
    ``reserved`` (held by approval requests still open)."""
    used = {r.client_system_transaction_id for r in records} | reserved
    kind = KIND_OF_OP[op]
    # Follow-up records may carry the original's reference (the spec's lookup "shares" it):
    # they count too, or a second capture would reuse REF-CAP1.
    sequence = 1 + sum(1 for r in records if kind_of(r.type) == kind)
    candidate = derive_reference(reference, op, sequence)
    while candidate in used:
        sequence += 1
        candidate = derive_reference(reference, op, sequence)
    return candidate


def make_followup_request(profile: Profile, op: Operation, reference: str, new_reference: str,
                          amount: Decimal, currency: str) -> FollowUpRequest:
    return FollowUpRequest.from_wire({
        "merchantId": profile.merchant_id, "storeId": profile.store_id,
        "userId": profile.user_id, "type": OPERATION_TYPES[op], "amount": amount,
        "currencyCode": currency, "clientSystemTransactionId": new_reference,
        "clientSystemInvoiceId": reference, "apmDetails": {"apmProvider": APM_PROVIDER}})


def plan_followup(client: GatewayClient, op: Operation, reference: str, *,
                  amount: str | Decimal | None = None, currency: str | None = None,
                  new_reference: str | None = None) -> FollowUpPlan:
    """Look ``reference`` up, refuse what the gateway would refuse, build the request."""
    currency = checked_currency(currency)
    return plan_from_records(client.profile, op, reference, client.lookup(reference),
                             amount=amount, currency=currency, new_reference=new_reference)


def checked_currency(currency: str | None) -> str | None:
    if currency is None:
        return None
    try:
        return check_currency(currency)
    except ValueError as exc:
        raise RequestValidationError([("--currency", str(exc))]) from None


def plan_from_records(profile: Profile, op: Operation, reference: str,
                      records: list[TransactionRecord], *, amount: str | Decimal | None = None,
                      currency: str | None = None, new_reference: str | None = None,
                      reserved: frozenset[str] = frozenset()) -> FollowUpPlan:
    """Refuse what the gateway would refuse given the original's ``records``, build the
    request (``currency`` already checked by :func:`checked_currency`)."""
    balance = balance_from_records(reference, records)
    wanted: Decimal | None = None
    if amount is not None:
        try:
            wanted = parse_major(amount, currency or balance.currency)
        except ValueError as exc:
            raise RequestValidationError([("--amount", str(exc))]) from None
        if wanted <= 0:  # bad input (exit 4), not something the gateway would refuse
            raise RequestValidationError(
                [("--amount", f"must be greater than zero (got {amount})")]
            )
    to_send = check_followup(balance, op, wanted, currency)
    new_ref = new_reference or next_reference(reference, op, records, reserved)
    if any(r.client_system_transaction_id == new_ref for r in records):
        raise RequestValidationError(
            [("--new-ref", f"{new_ref} is already used by a transaction of {reference}")]
        )
    request = make_followup_request(profile, op, reference, new_ref, to_send, balance.currency)
    return FollowUpPlan(op=op, request=request, balance=balance)
