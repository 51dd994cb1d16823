"""Reading a request once and strictly: JSON bodies, query strings and the one model of each
JSON route; every problem a 400 naming the field (docs/sandbox.md, "Strict input")."""

from __future__ import annotations

import gc
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
from pydantic import ConfigDict, Field, field_validator

from walletctl.errors import RequestValidationError
from walletctl.models.base import MONEY_KEYS, WireModel, fold_key
from walletctl.models.checkout import CheckoutDetails, CheckoutRequest, Provider, RedirectDetails
from walletctl.models.fields import NOT_BLANK_PATTERN, Currency, Reference, Text, Url
from walletctl.models.followup import ApmRequestDetails, FollowUpRequest
from walletctl.models.money import exponent
from walletctl.models.walletpay import AuthorizationRequest
from walletctl.models.walletpay import ThreeDSecure as _ThreeDSecure
from walletctl.sandbox.replies import SandboxError, invalid_body

if TYPE_CHECKING:
    from starlette.requests import Request

M = TypeVar("M", bound=WireModel)
T = TypeVar("T")

MAX_DEPTH = 32
MAX_DIGITS = 18  # minor units of any amount fit a signed 64-bit integer
# the integer fields of the sandbox's request models (int32 in the spec), folded
INT_KEYS = frozenset({"redirecturltimeout", "productquantity", "messageexpiryseconds",
                      "advanceseconds"})
AMOUNT_TEXT = re.compile(r"-?([0-9]+)(?:\.([0-9]+))?", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one: JSON decodes a pair to one character
_INT_TEXT_MAX = 64  # longer JSON integers are kept as Decimal (int() would refuse > 4300)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SandboxError(400, f"{key}: given twice (each key may appear once per object)")
        out[key] = value
    return out


def _int(text: str) -> int | Decimal:
    """A JSON integer literal: an ``int``, or a ``Decimal`` when it is long or ``-0`` (which
    no integer field takes, and money reads as text)."""
    return int(text) if len(text) <= _INT_TEXT_MAX and text != "-0" else Decimal(text)


def _decimal(text: str) -> Decimal:
    """A JSON number with a fraction or exponent, kept exactly. A Python function, not the
    ``Decimal`` type itself: the parser's C loop lets other threads (the event loop) run only
    between Python calls, so this keeps a body of 250,000 decimals from holding them ~100 ms."""
    return Decimal(text)


def _depth_ok(data: Any) -> bool:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                return False
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return True


def _surrogate_at(data: Any) -> str | None:
    """The path of the first key or string holding a lone surrogate, else None."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return path or "(request)"
        elif isinstance(node, dict):
            for key, value in node.items():
                if _SURROGATE.search(key):
                    return f"{path}.(key)" if path else "(key)"
                stack.append((value, f"{path}.{key}" if path else key))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def parse_object(raw: bytes, *, where: str = "(request)") -> dict[str, Any]:
    """Decode a body that must be a JSON object, strictly; 400 naming the rule."""
    if not raw.strip():
        raise SandboxError(400, f"{where}: a JSON body is required")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SandboxError(400, f"{where}: the body is not UTF-8 text") from None

    def constant(name: str) -> Any:
        raise SandboxError(400, f"{where}: {name} is not a JSON number")

    try:
        data = json.loads(text, parse_float=_decimal, parse_int=_int,
                          parse_constant=constant, object_pairs_hook=_pairs)
    except RecursionError:
        raise SandboxError(400, f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        raise SandboxError(400, f"{where}: the body is not valid JSON") from None
    if not _depth_ok(data):
        raise SandboxError(400, f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    if "\\u" in text and (bad := _surrogate_at(data)) is not None:
        raise SandboxError(400, f"{bad}: contains a lone UTF-16 surrogate escape (\\ud800-"
                           "\\udfff without its pair), which is not text")
    if not isinstance(data, dict):
        raise SandboxError(400, f"{where}: the body must be a JSON object")
    return data


def read_body(raw: bytes, fmt: str, *, where: str = "(request)") -> dict[str, Any]:
    data = parse_object(raw, where=where)
    check_numbers(data, fmt)
    return data


# A body up to this size is read on the event loop (well under a millisecond); a larger one
# in a worker thread, so that no other client waits while it is parsed and checked.
OFF_LOOP_BYTES = 16 * 1024
WORKERS = 2  # worker threads for large bodies and seeding at once (the rest queue)


_GC_LOCK = threading.Lock()
_gc_pauses = [0, False]  # workers running with the collector paused; whether we paused it


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a worker builds many objects: a full
    collection of the hundreds of thousands of objects a 1 MB body parses to holds the lock
    every thread needs (measured: 180-310 ms each, several per body); what a body parses to
    has no cycles, and is freed by reference counting."""
    with _GC_LOCK:
        if not _gc_pauses[0]:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pauses[0] -= 1
            if not _gc_pauses[0] and _gc_pauses[1]:
                gc.enable()


def _paused(work: Callable[[], T]) -> T:
    with _collector_paused():
        return work()


async def off_loop(request: Request, work: Callable[[], T], *, abandon: bool = True) -> T:
    """``work()`` in a worker thread, at most :data:`WORKERS` of them per app at once;
    ``abandon``: a cancelled caller (the server stopping) does not wait for the thread."""
    state = request.app.state
    limiter = getattr(state, "worker_limiter", None)
    if limiter is None:  # made on the app's event loop, on first use
        limiter = state.worker_limiter = anyio.CapacityLimiter(WORKERS)
    # abandoned when the server stops: the thread ends on its own, the stop does not wait
    return await anyio.to_thread.run_sync(_paused, work, limiter=limiter,
                                          abandon_on_cancel=abandon)


async def read_object(request: Request, *, where: str = "(request)") -> dict[str, Any]:
    """:func:`parse_object` of the request's body, off the loop when it is large."""
    raw = await request.body()
    if len(raw) <= OFF_LOOP_BYTES:
        return parse_object(raw, where=where)
    return await off_loop(request, lambda: parse_object(raw, where=where))


async def read_model(request: Request, model: type[M], *, where: str = "(request)") -> M:
    fmt = request.app.state.ctx.config.amount_format
    raw = await request.body()

    def read() -> M:
        return parse_model(model, read_body(raw, fmt, where=where), fmt)

    return read() if len(raw) <= OFF_LOOP_BYTES else await off_loop(request, read)


def parse_model(model: type[M], data: dict[str, Any], fmt: str) -> M:
    try:
        return model.from_wire(data, fmt)  # type: ignore[arg-type]
    except RequestValidationError as exc:
        raise invalid_body(exc) from None
    except (ValueError, TypeError, RecursionError):
        raise SandboxError(400, "(request): the body could not be read") from None


def get_folded(data: Any, name: str) -> Any:
    """``data[name]`` with the key in any ASCII letter case (None when absent or not a dict)."""
    if isinstance(data, dict):
        for key, value in data.items():
            if fold_key(key) == name.lower():
                return value
    return None


def _minor_hint(text: str, currency: str) -> str:
    places = exponent(currency)
    whole, _, fraction = text.lstrip("+").partition(".")
    example = ""
    if len(fraction) <= places:
        minor = int(whole + fraction.ljust(places, "0"))
        example = f" (\"{minor}\" for {text} {currency})"
    return (f"{text} has a decimal point, but this sandbox reads amounts in minor units"
            f"{example}; set amount_format = minor in the walletctl profile, or serve the "
            "sandbox with --amount-format decimal")


def check_amount(value: Any, path: str, currency: str, fmt: str) -> None:
    """Refuse an amount the sandbox could misread (400 naming ``path``)."""
    if isinstance(value, bool):
        raise SandboxError(400, f"{path}: must be an amount, not a boolean")
    if isinstance(value, Decimal):
        exp = value.as_tuple().exponent
        if not isinstance(exp, int) or exp > 0:
            raise SandboxError(400, f"{path}: must be written without an exponent")
        if exp < -MAX_DIGITS:
            raise SandboxError(400, f"{path}: at most {MAX_DIGITS} digits")
        text = format(value, "f")
    else:  # an int or a string: what else a parsed body holds outside objects and arrays
        text = str(value)
    match = AMOUNT_TEXT.fullmatch(text)
    if match is None:
        raise SandboxError(400, f"{path}: must be ASCII digits with an optional decimal point")
    whole, fraction = match.group(1), match.group(2) or ""
    if len(whole.lstrip("0")) + len(fraction) > MAX_DIGITS:
        raise SandboxError(400, f"{path}: larger than any currency amount (at most "
                           f"{MAX_DIGITS} digits)")
    if fmt == "minor" and match.group(2) is not None:
        raise SandboxError(400, f"{path}: {_minor_hint(text, currency)}")
    places = exponent(currency)
    if fmt == "decimal" and len(fraction) > places:
        raise SandboxError(400, f"{path}: {currency} amounts have {places} decimal "
                           f"place{'s' if places != 1 else ''} (this sandbox reads decimal "
                           "amounts: amount_format = decimal)")


def integer_problem(value: Any) -> str | None:
    """Why ``value`` is not a JSON integer, else None (never converts it)."""
    if isinstance(value, bool):
        return "must be an integer, not a boolean"
    if isinstance(value, int) or value is None or isinstance(value, dict | list):
        return None  # the range, null and other types: the model's rules
    if isinstance(value, Decimal):
        if value.is_zero() and value.is_signed() and value.as_tuple().exponent == 0:
            return "must be an integer: 0, not -0"
        if len(value.as_tuple().digits) > _INT_TEXT_MAX:
            return f"must be an integer of at most {_INT_TEXT_MAX} digits"
        return "must be an integer: digits only, no fraction or exponent"
    return "must be an integer (a JSON number), not a string"  # what else a body holds


def check_numbers(data: Any, fmt: str) -> None:
    """Walk a parsed body: strict money fields, strict integer fields."""
    currency = get_folded(data, "currencyCode")
    cur = currency.upper() if isinstance(currency, str) else "EUR"
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                sub = f"{path}.{key}" if path else str(key)
                low = fold_key(key)
                if low in MONEY_KEYS and value is not None and not isinstance(value, dict | list):
                    check_amount(value, sub, cur, fmt)
                elif low in INT_KEYS and (problem := integer_problem(value)) is not None:
                    raise SandboxError(400, f"{sub}: {problem}")
                elif isinstance(value, dict | list):
                    stack.append((value, sub))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node)
                         if isinstance(v, dict | list))


# -- query strings -------------------------------------------------------------------------


def _unquote(raw: bytes) -> bytes:
    return urllib.parse.unquote_to_bytes(raw.replace(b"+", b" "))


def read_query(query: bytes, names: Iterable[str],
               required: Iterable[str] = ()) -> dict[str, str]:
    """``{name: value}`` for the ``names`` in the raw ``query`` (any ASCII letter case); 400
    for a name given twice, a value not UTF-8, and the ``required`` ones missing or blank."""
    wanted = {name.lower(): name for name in names}
    found: dict[str, str] = {}
    for part in query.split(b"&"):
        if not part:
            continue
        raw_name, _, raw_value = part.partition(b"=")
        name = _unquote(raw_name).decode("utf-8", "replace")
        wire = wanted.get(fold_key(name))  # ASCII letters only: never the Kelvin sign
        if wire is None:
            continue  # a parameter the route does not read
        if wire in found:
            raise SandboxError(400, f"{wire}: is given more than once (query parameter; "
                               "names are read case-insensitively)")
        try:
            found[wire] = _unquote(raw_value).decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxError(400, f"{wire}: is not UTF-8 text (query parameter; "
                               "percent-escapes must encode UTF-8)") from None
    missing = [f"{name}: is required (query parameter)" for name in required
               if not found.get(name, "").strip()]
    if missing:
        raise SandboxError(400, "; ".join(missing))
    return found


async def form_values(request: Request, name: str) -> list[str]:
    """The values of ``name`` in a hosted page's form (its first 4 KiB; ``[""]`` if absent)."""
    raw = (await request.body())[:4096].decode("utf-8", "replace")
    return urllib.parse.parse_qs(raw, keep_blank_values=True).get(name) or [""]


# -- the request models ------------------------------------------------------------------------

# merchantId / storeId of the browser-wallet routes and other short identifiers
# not blank: Python's whitespace spelt out (``\S`` means another set to each regex engine:
# ECMAScript's leaves U+0085 in), so the server and every reader of the document agree
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=NOT_BLANK_PATTERN)]
Short = Annotated[str, Field(max_length=256)]


# -- gateway: redirect wallet ------------------------------------------------------------------


class CheckoutDetailsBody(CheckoutDetails):
    payment_method: Provider  # mandatory on the wire (spec 2.1); walletctl fills it in


class RedirectDetailsBody(RedirectDetails):
    cancel_url: Url  # mandatory on the wire (spec 2.1: "the same value as errorUrl")
    refused_url: Url


class CheckoutBody(CheckoutRequest):
    """``POST /api/v5/checkout`` (spec 2.1)."""

    checkout_details: CheckoutDetailsBody
    redirect_details: RedirectDetailsBody


class ApmDetailsBody(ApmRequestDetails):
    apm_provider: Provider  # mandatory on the wire (spec 2.3)


class FollowUpBody(FollowUpRequest):
    """``POST /api/v5/apmTransactions`` (spec 2.3)."""

    apm_details: ApmDetailsBody


# -- gateway: browser wallet -------------------------------------------------------------------


class PublicKeysBody(WireModel):
    """``POST /api/v5/publicKeys``."""

    merchant_id: Id
    store_id: Id


class PaymentAccountBody(WireModel):
    """``POST /api/v5/paymentAccounts`` (sent by walletpay.js). ``paymentData``: the wallet's
    PaymentData object, the token object itself, or the token as a JSON string."""

    merchant_id: Id
    store_id: Id
    client_system_transaction_id: Reference
    payment_data: dict[str, Any] | Annotated[str, Field(min_length=1, max_length=100_000)]


class ChallengeRequestBody(WireModel):
    """``POST /api/v5/threeDSecure`` (server key): a hosted 3DS challenge for one payment
    account, amount and reference; ``returnUrl`` is where the shopper's browser goes after it."""

    merchant_id: Id
    store_id: Id
    transaction_account_id: Id
    amount: Decimal
    currency_code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    client_system_transaction_id: Reference
    return_url: Url | None = None
    # the shop's display name on the challenge page (as 3-D Secure's merchantName)
    merchant_name: Annotated[str, Field(min_length=1, max_length=100)] | None = None


class ThreeDSecureBody(_ThreeDSecure):
    three_ds_server_trans_id: Short = Field(min_length=1, alias="threeDSServerTransId")
    authentication_value: Short = Field(min_length=1)


class AuthorizationBody(AuthorizationRequest):
    """``POST /api/v5/transactions``."""

    merchant_id: Id
    store_id: Id
    user_id: Id
    client_system_transaction_id: Reference
    transaction_account_id: Id
    encryption_key_id: Id | None = None
    cryptogram: Short | None = None
    eci_indicator: Short | None = None
    three_d_secure: ThreeDSecureBody | None = Field(default=None, alias="threeDSecure")


# -- emulated wallet provider and 3DS step -----------------------------------------------------


class _Lenient(WireModel):
    """A body from a browser script: unknown keys are dropped, not refused."""

    model_config = ConfigDict(extra="ignore")


class WalletTokenBody(_Lenient):
    """``POST /wallet/token``: mint a token for ``publicKeyApi`` or ``encryptionKey``."""

    card_id: Id
    gateway: Short | None = None
    gateway_merchant_id: Id
    public_key_api: Short | None = None
    encryption_key: Annotated[str, Field(max_length=4096)] | None = None
    message_expiry_seconds: Annotated[int, Field(ge=-86_400, le=86_400)] | None = None


class DriverTokenBody(_Lenient):
    """``POST /wallet/testing/redeem``: the browser-test driver's one-time token."""

    token: Annotated[str, Field(min_length=1, max_length=200)]


class ChallengeBody(_Lenient):
    """``POST /_sandbox/3ds/challenge``."""

    transaction_account_id: Id
    merchant_id: Id
    store_id: Id
    outcome: Literal["success", "failure"] = "success"
    # optional binding (the hosted challenge always binds all three)
    amount: Decimal | None = None
    currency_code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = None
    client_system_transaction_id: Reference | None = None


# -- demo merchant -----------------------------------------------------------------------------


class DemoAddress(_Lenient):
    """A wallet address as the demo keeps it (strings only; anything else is dropped)."""

    name: Short | None = None
    postal_code: Short | None = None
    country_code: Short | None = None
    phone_number: Short | None = None
    address1: Short | None = None
    address2: Short | None = None
    address3: Short | None = None
    locality: Short | None = None
    administrative_area: Short | None = None
    sorting_code: Short | None = None


class DemoQuoteBody(_Lenient):
    """``POST /demo/merchant/api/quote``: the payer's current choices."""

    reference: Short
    shipping_option_id: Short | None = None
    offer_code: Short | None = None
    shipping_address: DemoAddress | None = None


class ErrorDetailsBody(_Lenient):
    message: Annotated[str, Field(max_length=2000)] | None = None


class EventDetail(_Lenient):
    """``event.detail`` (spec 2.8): the success object or the gateway error object."""

    client_system_transaction_id: Short | None = None
    transaction_account_id: Short | None = None
    transaction_method: Short | None = None
    cryptogram: Short | None = Field(default=None, repr=False)
    eci_indicator: Short | None = None
    email: Short | None = None
    billing_address: DemoAddress | None = None
    shipping_address: DemoAddress | None = None
    code: Short | None = None
    description: Short | None = None
    details: ErrorDetailsBody | None = None

    def redacted(self) -> dict[str, Any]:
        """What the demo lists: every field given but the cryptogram."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True,
                               exclude={"cryptogram"})


class DemoResultBody(_Lenient):
    """``POST /demo/merchant/api/result``: ``{detail, approvedTotal?, reference?}``."""

    detail: EventDetail
    approved_total: Annotated[str, Field(max_length=64)] | Decimal | None = None
    reference: Short | None = None


CLOCK_MAX_SECONDS = 10 * 366 * 86_400  # ten years, either way, per call and in total


class ClockBody(WireModel):
    """``POST /_sandbox/clock``."""

    advance_seconds: Annotated[int, Field(ge=-CLOCK_MAX_SECONDS, le=CLOCK_MAX_SECONDS)] = 0


MAX_SEED = 10_000  # transactions per POST /_sandbox/seed (amounts: major units as text)


class SeedItem(WireModel):
    model_config = ConfigDict(frozen=True)

    reference: Reference
    amount: str = Field(min_length=1, max_length=24)


class SeedRequest(WireModel):
    model_config = ConfigDict(frozen=True)

    merchant_id: Text
    store_id: Text
    currency: Currency
    kind: Literal["sale", "preauth"]
    transactions: list[SeedItem] = Field(min_length=1, max_length=MAX_SEED)

    @field_validator("currency", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value
