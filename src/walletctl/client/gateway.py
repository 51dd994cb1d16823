"""GatewayClient (sync; the async one is in aio.py): auth, paths, timeouts, error mapping.

Import it only where a request is really sent (httpx is not cheap to import). Every answer is
read, decoded and sanitised by :mod:`.answer_guard`; a 2xx answer to a money move that names
another reference, amount, currency or operation is an unknown outcome (:func:`check_echo`).
Transport errors are split by what they prove:

    connect failed (DNS, refused, connect timeout)  -> NetworkError: nothing was sent
    sent, then no/partial answer on a money POST    -> UnknownOutcomeError: look it up first
    sent, then no/partial answer on a read          -> NetworkError (safe to repeat)
    HTTP >= 400                                     -> GatewayError (AuthError for 401/403)
    2xx with a body that is not the spec's shape    -> ResponseError
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, Self

from walletctl import __version__
from walletctl.client._httpx import httpx
from walletctl.client.answer_guard import (
    BadEncoding,
    BodyReader,
    BodyTooLarge,
    DeadlineExceeded,
    alarm,
    clean,
    clean_text,
    credential_parts,
    overall_deadline,
)
from walletctl.client.tls import tls_context
from walletctl.config.profile import Profile
from walletctl.errors import (
    AuthError,
    GatewayError,
    NetworkError,
    NotConnectedError,
    RedirectError,
    RequestValidationError,
    ResponseError,
    UnknownOutcomeError,
)
from walletctl.masking import mask_body, mask_headers
from walletctl.models.base import dumps, loads
from walletctl.models.money import from_wire
from walletctl.models.records import TransactionRecord, parse_records

if TYPE_CHECKING:  # imported where used: `walletctl lookup` never needs the request models
    from walletctl.models.checkout import CheckoutRequest, CheckoutResponse
    from walletctl.models.followup import FollowUpRequest, FollowUpResponse
    from walletctl.models.money import AmountFormat

MAX_RETRY_AFTER = 60.0


@dataclass(slots=True)
class Outgoing:
    """A request as the async client sends it (no ``httpx.Request``: building one costs more
    CPU than aiohttp's whole send, measured in benchmarks/batch.py). Same attribute names."""

    method: str
    url: str  # complete, query string included
    headers: dict[str, str]
    content: bytes | None


@dataclass(eq=False, repr=False)  # a repr could show its credentials
class PreparedCall:
    """One request ready to send (also what --dry-run prints)."""

    request: httpx.Request | Outgoing
    _: KW_ONLY
    reference: str | None
    moves_money: bool
    secret_headers: tuple[str, ...]

    def where(self) -> str:
        """``METHOD url`` without the query string (for error messages)."""
        return f"{self.request.method} {str(self.request.url).split('?', 1)[0]}"

    def secrets(self) -> tuple[str, ...]:
        """The credentials this request carries (to scrub from whatever comes back)."""
        values = (self.request.headers.get(name) for name in self.secret_headers)
        return tuple(part for value in values if value for part in credential_parts(value))

    def describe(self) -> dict[str, Any]:
        """The exact request with secrets masked."""
        r = self.request
        return {"method": r.method, "url": str(r.url),
                "headers": mask_headers(r.headers, self.secret_headers),
                "body": mask_body(loads(r.content)) if r.content else None}


class Answer:
    """A read, decoded and sanitised answer (see :mod:`walletctl.client.answer_guard`)."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes,
                 secrets: tuple[str, ...]) -> None:
        self.status = status
        self.headers = headers
        self.secrets = secrets
        self.size = len(body)
        self.is_json = False
        self.data: Any = None
        if body:
            try:
                self.data = clean(loads(body), secrets)
                self.is_json = True
            except (ValueError, RecursionError):
                pass


def one_line(text: str, limit: int = 2000) -> str:
    """A trace line: long bodies are cut (the whole body is rarely what one needs to see)."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}...({len(text) - limit + 40} more characters)"


def reason_of(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def nothing_sent(exc: httpx.TransportError) -> bool:
    """True only when the failure provably happened before the request left."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout
                      | httpx.UnsupportedProtocol | httpx.ProxyError)


def parse_retry_after(value: str | None, now: float | None = None, *,
                      cap: float = MAX_RETRY_AFTER) -> float | None:
    """``Retry-After`` in seconds or HTTP-date form -> seconds (capped), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), cap)


def gateway_error(call: PreparedCall, response: Answer) -> GatewayError:
    body: Any = response.data  # sanitised and scrubbed of the request's credentials
    lower = _folded(body)
    details = lower.get("details")
    detail = _str(_folded(details).get("message")) if isinstance(details, dict) else (
        details if isinstance(details, str) else None)
    status, ref = response.status, call.reference
    # what the gateway asked for, before the cap: a batch stops on one it will not honour
    asked = parse_retry_after(response.headers.get("Retry-After"), cap=float("inf"))
    retry_after = None if asked is None else min(asked, MAX_RETRY_AFTER)
    hint = None
    if status in (401, 403):
        hint = "check the profile's credentials (`walletctl profile check`)"
    elif status == 404 and ref:
        hint = (f"no transaction {ref} for this merchant and store: check the reference and the "
                "profile (`walletctl profile show`)")
    elif status == 409 and call.moves_money and ref:
        hint = (f"the reference {ref} is taken: `walletctl lookup {ref}` shows what holds it; a "
                "new transaction needs a new reference")
    elif status >= 500 and call.moves_money and ref:
        hint = f"check with `walletctl lookup {ref}` before trying again"
    elif status == 429:
        wait = "" if retry_after is None else f" {retry_after:g} s (Retry-After)"
        hint = f"the gateway is rate limiting: wait{wait} and try again"
    cls = AuthError if status in (401, 403) else GatewayError
    error = cls(status, code=_str(lower.get("code")), description=_str(lower.get("description")),
                detail=detail, hint=hint, body=mask_body(body), retry_after=retry_after)
    error.retry_after_asked = asked
    return error


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _str(value: Any) -> str | None:
    """Gateway text for a one-line message: no control characters (newlines, ANSI escapes)."""
    return None if value is None else _CONTROL.sub(" ", str(value))[:500]


def parse_model(model: Any, data: Any, profile: Profile, what: str,
                reference: str | None = None) -> Any:
    try:
        return model.from_wire(data, profile.amount_format)
    except RequestValidationError as exc:
        field, rule = exc.problems[0]
        raise ResponseError(
            f"unexpected {what} response: {field}: {rule}",
            # the gateway accepted the request: it may well have been applied
            hint=f"check with `walletctl lookup {reference}`" if reference else None,
        ) from None


def _folded(data: Any) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in data.items()} if isinstance(data, dict) else {}


def check_echo(data: Any, *, reference: str, amount: Decimal, currency: str, operation: str,
               fmt: AmountFormat, invoice: str | None = None) -> None:
    """Raise :class:`UnknownOutcomeError` when the answer's echoed fields contradict the
    request (absent fields are fine)."""
    got = _folded(data)
    found: list[str] = []

    def differs(key: str, wanted: str, shown: str, fold: bool = False) -> None:
        value = got.get(key.lower())
        if value is None:
            return
        text = str(value)
        if (text.lower() != wanted.lower()) if fold else (text != wanted):
            found.append(f"{shown} {text[:80]!r}, not {wanted!r}")

    differs("clientSystemTransactionId", reference, "clientSystemTransactionId")
    if invoice is not None:
        differs("clientSystemInvoiceId", invoice, "clientSystemInvoiceId")
    differs("currencyCode", currency, "currencyCode", fold=True)
    differs("type", operation, "type", fold=True)
    raw_amount = got.get("amount")
    if raw_amount is not None and currency:
        try:
            value = from_wire(raw_amount, currency, fmt)
        except (ValueError, ArithmeticError):
            found.append(f"amount {str(raw_amount)[:40]!r} is not an amount")
        else:
            if value != amount:
                found.append(f"amount {value}, not {amount}")
    if found:
        raise UnknownOutcomeError(
            reference, "the gateway's answer does not match the request: " + "; ".join(found[:3]))


def check_reference_field(value: str, field: str) -> str:
    """A merchant reference typed by the user (the one rule of models.fields), before it
    goes into a request or URL: a :class:`RequestValidationError` naming ``field``."""
    from walletctl.models.fields import check_reference

    try:
        return check_reference(value)
    except ValueError as exc:
        raise RequestValidationError([(field, str(exc))]) from None


Trace = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class FollowUpCall:
    """A follow-up's body, already encoded (a batch builds it from a template), with what
    its answer is checked against (the same checks for a batch's row and a single command)."""

    body: bytes
    reference: str  # clientSystemTransactionId (the new reference)
    invoice: str  # clientSystemInvoiceId (the original's reference)
    amount: Decimal
    currency: str
    type: str  # the wire type, e.g. ecom.capture
    operation: str  # capture / refund / reverse

    @classmethod
    def of(cls, req: FollowUpRequest, fmt: AmountFormat) -> FollowUpCall:
        return cls(dumps(req.to_wire(fmt)).encode(), req.client_system_transaction_id,
                   req.client_system_invoice_id, req.amount, req.currency_code, req.type,
                   req.operation)


def profile_timeout(profile: Profile) -> httpx.Timeout:
    """The profile's timeout, with connecting capped at 10 s (a dead host fails fast)."""
    return httpx.Timeout(profile.timeout, connect=min(profile.timeout, 10.0))


class _Base:
    def __init__(self, profile: Profile, *, trace: Trace | None = None,
                 auth_header: tuple[str, str] | Literal["resolve"] | None = "resolve") -> None:
        self.profile = profile
        self.trace = trace
        self._auth_value = auth_header
        self.timeout = profile_timeout(profile)
        self._urls: dict[str, httpx.URL] = {}  # parsed once: a batch posts to one URL

    def with_profile(self, profile: Profile) -> Self:
        """This client (its connection, trace and credentials) under ``profile``, for one
        movement under the desk's rules: a copy, so the caller's client keeps its own."""
        import copy

        other = copy.copy(self)
        other.profile = profile
        return other

    # -- building --------------------------------------------------------------------------
    def _auth(self) -> tuple[str, str] | None:
        if self._auth_value == "resolve":
            from walletctl.config.secrets import auth_header

            self._auth_value = auth_header(self.profile)
        return self._auth_value

    def prepare(self, method: str, path_key: str, *, json: Any = None,
                content: bytes | None = None, params: dict[str, str] | None = None,
                path_suffix: str = "", reference: str | None = None, moves_money: bool = False,
                auth: bool | tuple[str, str] = True, headers: dict[str, str] | None = None,
                ) -> PreparedCall:
        url = self.profile.url(path_key) + path_suffix
        hdrs = {"Accept": "application/json", "User-Agent": f"walletctl/{__version__}"}
        pair = auth if isinstance(auth, tuple) else self._auth() if auth else None
        if pair is not None:
            hdrs[pair[0]] = pair[1]
        secret_headers = () if pair is None else (pair[0],)
        if headers:
            hdrs.update(headers)
        if json is not None:
            content = dumps(json).encode()
        if content is not None:  # JSON, from ``json`` or already encoded
            hdrs["Content-Type"] = "application/json"
        try:
            request = self._build(method, url, params, hdrs, content)
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:  # nothing was sent
            raise RequestValidationError(
                [("request", f"cannot be sent: {clean_text(str(exc))[:200]}")]) from None
        return PreparedCall(request, reference=reference, moves_money=moves_money,
                            secret_headers=secret_headers)

    def _parsed(self, url: str) -> httpx.URL:
        """``url`` parsed and checked once (a batch posts to one URL)."""
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = httpx.URL(url)
            if len(self._urls) < 64:
                self._urls[url] = parsed
        return parsed

    def _build(self, method: str, url: str, params: dict[str, str] | None,
               headers: dict[str, str], content: bytes | None) -> httpx.Request | Outgoing:
        return httpx.Request(method, self._parsed(url), params=params, headers=headers,
                             content=content)

    # -- tracing ---------------------------------------------------------------------------
    def _trace_request(self, call: PreparedCall) -> None:
        if self.trace is None:
            return
        d = call.describe()
        self.trace(f"> {d['method']} {d['url']}")
        for name, value in d["headers"].items():
            self.trace(f"> {name}: {value}")
        if d["body"] is not None:
            self.trace(one_line(f"> {dumps(d['body'])}"))

    def _trace_response(self, answer: Answer, elapsed: float) -> None:
        if self.trace is None:
            return
        self.trace(f"< HTTP {answer.status} ({elapsed * 1000:.0f} ms)")
        for name, value in mask_headers(answer.headers).items():
            self.trace(f"< {clean_text(name)}: {clean_text(value, answer.secrets)}")
        if answer.size:
            if answer.is_json:
                self.trace(one_line(f"< {dumps(mask_body(answer.data))}"))
            else:
                self.trace(f"< ({answer.size} bytes, not JSON)")

    # -- mapping ---------------------------------------------------------------------------
    @staticmethod
    def _not_connected(call: PreparedCall, reason: str) -> Exception:
        """The connection was never made: nothing reached the gateway."""
        return NotConnectedError(
            f"could not connect: {call.where()} ({reason})",
            hint="check the profile's base_url and that the gateway is reachable; "
            "nothing was sent",
        )

    @staticmethod
    def _no_answer(call: PreparedCall, reason: str) -> Exception:
        """Sent, then no (readable) answer: a money move's outcome is unknown; a read is safe
        to repeat."""
        if call.moves_money:
            return UnknownOutcomeError(call.reference or "the request", reason)
        return NetworkError(f"no answer from {call.where()} ({reason})", hint="safe to run again")

    def _map_guard_error(self, call: PreparedCall, exc: BaseException) -> Exception:
        """Deadline passed, answer too large or undecodable: the answer was not read."""
        if isinstance(exc, DeadlineExceeded):
            limit = overall_deadline(self.profile.timeout)
            return self._no_answer(call, f"no complete answer within {limit:g} s (twice the "
                                         "timeout)")
        reason = clean_text(str(exc))
        if call.moves_money:
            return self._no_answer(call, reason)
        return ResponseError(f"unreadable answer from {call.where()}: {reason}")

    def _secrets(self, call: PreparedCall) -> tuple[str, ...]:
        """What to scrub from an answer: the request's own credentials, and the profile's
        API key even on requests that did not carry it (an echo of it is never shown)."""
        own = self._auth_value
        if isinstance(own, tuple) and own[1]:
            return call.secrets() + credential_parts(own[1])
        return call.secrets()

    def _handle(self, call: PreparedCall, answer: Answer) -> Any:
        status = answer.status
        if status >= 400:
            raise gateway_error(call, answer)
        if 300 <= status < 400:
            where = clean_text(answer.headers.get("Location", "?"), self._secrets(call))[:300]
            raise RedirectError(
                f"gateway answered HTTP {status}, a redirect to {where} (not followed)",
                hint="check the profile's base_url (https? path prefix?)",
            )
        if not answer.size:
            return None
        if not answer.is_json:  # not JSON, or nested too deeply to parse
            raise ResponseError(
                f"gateway answered HTTP {status} with a body that is not JSON",
                hint=(
                    f"check with `walletctl lookup {call.reference}`"
                    if call.moves_money and call.reference
                    else None
                ),
            ) from None
        return answer.data

    # -- the spec's endpoints, for both clients --------------------------------------------
    def prepare_followup(self, req: FollowUpRequest) -> PreparedCall:
        return self._post_followup(FollowUpCall.of(req, self.profile.amount_format))

    def _post_followup(self, call: FollowUpCall) -> PreparedCall:
        return self.prepare("POST", "apm_transactions", content=call.body,
                            reference=call.reference, moves_money=True)

    def _followup_answer(self, call: FollowUpCall, data: Any) -> FollowUpResponse:
        """The follow-up's answer, checked against what was sent."""
        from walletctl.models.followup import FollowUpResponse

        check_echo(data, reference=call.reference, invoice=call.invoice, amount=call.amount,
                   currency=call.currency, operation=call.type, fmt=self.profile.amount_format)
        result: FollowUpResponse = parse_model(FollowUpResponse, data, self.profile,
                                               call.operation, call.reference)
        return result

    def prepare_lookup(self, reference: str) -> PreparedCall:
        check_reference_field(reference, "REF")
        params = {"merchantId": self.profile.merchant_id, "storeId": self.profile.store_id,
                  "clientSystemTransactionId": reference}
        return self.prepare("GET", "apm_transactions", params=params, reference=reference)

    def _records(self, data: Any) -> list[TransactionRecord]:
        """A lookup's records; negative (or non-finite) amounts are refused as malformed."""
        records = parse_records(data, self.profile.amount_format)
        for n, record in enumerate(records):
            amount = record.transaction_amount
            if not amount.is_finite() or amount < 0:
                raise ResponseError(
                    f"lookup response record [{n}]: transactionAmount: must be a non-negative "
                    f"amount, got {str(amount)[:40]}",
                    hint="the gateway's answer cannot be trusted: nothing was sent")
        return records


class GatewayClient(_Base):
    """Synchronous client (one command, one or two requests)."""

    def __init__(self, profile: Profile, *, transport: httpx.BaseTransport | None = None,
                 trace: Trace | None = None,
                 auth_header: tuple[str, str] | Literal["resolve"] | None = "resolve") -> None:
        super().__init__(profile, trace=trace, auth_header=auth_header)
        self._http = httpx.Client(transport=transport, timeout=self.timeout, follow_redirects=False,
                                  verify=tls_context(profile.base_url))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: PreparedCall) -> Any:
        return self._exchange(call)[0]

    def _exchange(self, call: PreparedCall) -> tuple[Any, Answer]:
        """The handled answer's data, and the answer itself (its headers)."""
        self._trace_request(call)
        started = time.perf_counter()
        limit = overall_deadline(self.profile.timeout)
        try:
            # From here until the answer is handled, an interrupt (Ctrl-C, SIGTERM, SIGHUP)
            # leaves a money move's outcome unknown.
            with alarm(limit):
                assert isinstance(call.request, httpx.Request)  # this client builds no other
                response = self._http.send(call.request, stream=True)
                try:
                    if response.is_stream_consumed:  # an in-memory transport: already decoded
                        reader = BodyReader(None)
                        reader.feed(response.content)
                    else:
                        reader = BodyReader(
                            response.headers.get("Content-Encoding"), time.monotonic() + limit
                        )
                        for chunk in response.iter_raw():
                            reader.feed(chunk)
                    body = reader.finish()
                finally:
                    response.close()
            answer = Answer(response.status_code, response.headers, body, self._secrets(call))
            self._trace_response(answer, time.perf_counter() - started)
            return self._handle(call, answer), answer
        except httpx.TransportError as exc:
            raise (self._not_connected if nothing_sent(exc) else self._no_answer)(
                call, reason_of(exc)) from None
        except (DeadlineExceeded, BodyTooLarge, BadEncoding) as exc:
            raise self._map_guard_error(call, exc) from None
        except KeyboardInterrupt:
            # Ctrl-C while a money move is in flight: it may have been applied, and running
            # the command again would derive a NEW reference and move the money twice.
            if call.moves_money:
                raise self._no_answer(call, "interrupted while waiting for the answer") from None
            raise

    def request(self, method: str, path_key: str, **kwargs: Any) -> Any:
        return self.send(self.prepare(method, path_key, **kwargs))

    # -- the spec's endpoints ------------------------------------------------------------
    def prepare_checkout(self, req: CheckoutRequest) -> PreparedCall:
        return self.prepare("POST", "checkout", json=req.to_wire(self.profile.amount_format),
                            reference=req.client_system_transaction_id, moves_money=True)

    def checkout(self, req: CheckoutRequest) -> CheckoutResponse:
        data, answer = self._exchange(self.prepare_checkout(req))
        from walletctl.models.checkout import CheckoutResponse

        result: CheckoutResponse = parse_model(
            CheckoutResponse, data, self.profile, "checkout", req.client_system_transaction_id
        )
        # the sandbox replays an identical checkout's stored answer and says so
        if answer.headers.get("X-Sandbox-Replayed", "").lower() == "true":
            result.mark_replayed()
        return result

    def followup(self, req: FollowUpRequest) -> FollowUpResponse:
        call = FollowUpCall.of(req, self.profile.amount_format)
        data, answer = self._exchange(self._post_followup(call))
        result = self._followup_answer(call, data)
        if answer.headers.get("X-Sandbox-Replayed", "").lower() == "true":
            result.mark_replayed()  # an identical earlier request's stored answer
        return result

    def lookup(self, reference: str) -> list[TransactionRecord]:
        return self._records(self.send(self.prepare_lookup(reference)))
