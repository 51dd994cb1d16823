"""Answers and their mapping to walletctl's errors (split from gateway.py).

``Answer`` is a read, decoded and sanitised response; ``gateway_error`` maps an error status
to :class:`~walletctl.errors.GatewayError`; ``parse_response`` turns a 2xx body into a model
(a body of the wrong shape is a ``ResponseError`` with a lookup hint). Also: the transport
error helpers (what proves that nothing was sent) and ``Retry-After`` parsing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from walletctl.client._httpx import httpx
from walletctl.client.answer_guard import clean, credential_parts
from walletctl.config.profile import Profile
from walletctl.errors import AuthError, GatewayError, RequestValidationError, ResponseError
from walletctl.masking import mask_body, mask_headers
from walletctl.models.base import loads

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
        found: list[str] = []
        for name in self.secret_headers:
            value = self.request.headers.get(name)
            if value:
                found.extend(credential_parts(value))
        return tuple(found)

    def describe(self) -> dict[str, Any]:
        """The exact request with secrets masked."""
        body: Any = None
        if self.request.content:
            body = mask_body(loads(self.request.content))
        return {
            "method": self.request.method,
            "url": str(self.request.url),
            "headers": mask_headers(self.request.headers, self.secret_headers),
            "body": body,
        }


class Answer:
    """A read, decoded and sanitised answer (see :mod:`walletctl.client.answer_guard`)."""

    def __init__(
        self, status: int, headers: Mapping[str, str], body: bytes, secrets: tuple[str, ...]
    ) -> None:
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
    return isinstance(
        exc,
        httpx.ConnectError
        | httpx.ConnectTimeout
        | httpx.PoolTimeout
        | httpx.UnsupportedProtocol
        | httpx.ProxyError,
    )


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
    code = description = detail = None
    body: Any = response.data  # sanitised and scrubbed of the request's credentials
    if isinstance(body, dict):
        lower = {str(k).lower(): v for k, v in body.items()}
        code = _str(lower.get("code"))
        description = _str(lower.get("description"))
        details = lower.get("details")
        if isinstance(details, dict):
            detail = _str({str(k).lower(): v for k, v in details.items()}.get("message"))
        elif isinstance(details, str):
            detail = details
    status = response.status
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    hint = None
    if status in (401, 403):
        hint = "check the profile's credentials (`walletctl profile check`)"
    elif status == 404 and call.reference:
        hint = (
            f"no transaction {call.reference} for this merchant and store: check the reference "
            "and the profile (`walletctl profile show`)"
        )
    elif status == 409 and call.moves_money and call.reference:
        hint = (
            f"the reference {call.reference} is taken: `walletctl lookup {call.reference}` "
            "shows what holds it; a new transaction needs a new reference"
        )
    elif status >= 500 and call.moves_money and call.reference:
        hint = f"check with `walletctl lookup {call.reference}` before trying again"
    elif status == 429:
        wait = "" if retry_after is None else f" {retry_after:g} s (Retry-After)"
        hint = f"the gateway is rate limiting: wait{wait} and try again"
    cls = AuthError if status in (401, 403) else GatewayError
    error = cls(
        status,
        code=code,
        description=description,
        detail=detail,
        hint=hint,
        body=mask_body(body),
        retry_after=retry_after,
    )
    # what the gateway asked for, before the cap: a batch stops on one it will not honour
    error.retry_after_asked = parse_retry_after(response.headers.get("Retry-After"),
                                                cap=float("inf"))
    return error


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _str(value: Any) -> str | None:
    """Gateway text for a one-line message: no control characters (newlines, ANSI escapes)."""
    return None if value is None else _CONTROL.sub(" ", str(value))[:500]


def parse_model(
    model: Any, data: Any, profile: Profile, what: str, reference: str | None = None
) -> Any:
    try:
        return model.from_wire(data, profile.amount_format)
    except RequestValidationError as exc:
        field, rule = exc.problems[0]
        raise ResponseError(
            f"unexpected {what} response: {field}: {rule}",
            # the gateway accepted the request: it may well have been applied
            hint=f"check with `walletctl lookup {reference}`" if reference else None,
        ) from None
