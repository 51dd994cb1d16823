"""Request body limits and content types, enforced while reading (pure ASGI middleware).

* A body larger than :data:`MAX_BODY` bytes is answered 413 as soon as that is known: at
  once from ``Content-Length``, else when the streamed (chunked) body passes the limit. The
  server never holds more than the limit (plus one chunk) of a request body, whatever is
  sent, and closes the connection after the 413.
* Request bodies held at once, across all connections, are at most a budget
  (:class:`BodyBudget`, ``SandboxConfig.body_budget``, default
  :data:`~walletctl.sandbox.config.DEFAULT_BODY_BUDGET`): a request's announced
  ``Content-Length`` is reserved before its body is read, a chunked body's bytes as they
  arrive, and given back when the route has answered. A request that does not fit is answered
  503 with ``Retry-After: 1`` and the connection closed, so many connections holding partial
  bodies cost at most the budget, whatever they announce.
* A non-empty body must be JSON (``application/json`` or ``*/*+json``) on every route except
  the hosted page's form (``POST /pay/{token}``: ``application/x-www-form-urlencoded``);
  anything else is 415 before the route runs. A JSON body's ``charset`` parameter, when
  given, must be ``utf-8`` (415 otherwise: the body is read as UTF-8, never re-decoded).

The body read here is replayed to the route, so routes keep using ``await request.body()``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Message, Scope

from walletctl.sandbox.config import DEFAULT_BODY_BUDGET
from walletctl.sandbox.replies import error_body

MAX_BODY = 1_000_000
FORM_PREFIX = "/pay/"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def send_error(send: Any, status: int, message: str, *, close: bool = False,
                     headers: list[tuple[bytes, bytes]] | None = None,
                     description: str | None = None) -> None:
    """Send a gateway error object (``{code, description, details: {message}}``)."""
    body = json.dumps(error_body(status, message, description=description),
                      separators=(",", ":")).encode()
    head = [(b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()), *(headers or [])]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def json_charset(value: str | None) -> str | None:
    """The ``charset`` of a JSON ``Content-Type`` when it is not UTF-8 (None: absent or
    ``utf-8``, any case, quoted or not)."""
    for param in (value or "").split(";")[1:]:
        name, _, given = param.partition("=")
        if name.strip().lower() == "charset":
            charset = given.strip().strip('"').strip().lower()
            if charset != "utf-8":
                return charset[:40] or "(empty)"
    return None


def _type_ok(path: str, value: str | None) -> tuple[bool, str]:
    mt = media_type(value)
    if path.startswith(FORM_PREFIX):
        return mt == "application/x-www-form-urlencoded", "application/x-www-form-urlencoded"
    return mt == "application/json" or (mt.startswith("application/") and
                                         mt.endswith("+json")), "application/json"


class BodyBudget:
    """Bytes of request bodies held at once, across all connections of one server (its
    event loop is the only user: no lock)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.total:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class BodyLimitMiddleware:
    """See the module docstring."""

    def __init__(self, app: Any, max_body: int = MAX_BODY,
                 body_budget: int = DEFAULT_BODY_BUDGET) -> None:
        self.app = app
        self.max_body = max_body
        self.budget = BodyBudget(body_budget)

    async def _over_budget(self, send: Any) -> None:
        await send_error(send, 503, f"(request): the sandbox holds {self.budget.total} bytes "
                         "of request bodies at once, across all connections, and this one "
                         "does not fit now; try again shortly", close=True,
                         headers=[(b"retry-after", b"1")])

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        announced = 0
        if length is not None:
            text = length.strip()
            if not text.isascii() or not text.isdigit():
                await send_error(send, 400, "Content-Length: must be a whole number of bytes",
                                 close=True)
                return
            text = text.lstrip("0")  # its size read from the digits: no int() of any length
            if len(text) > len(str(self.max_body)) or int(text or "0") > self.max_body:
                await send_error(send, 413, f"(request): body larger than {self.max_body} "
                                 "bytes", close=True)
                return
            announced = int(text or "0")
        if not self.budget.take(announced):
            await self._over_budget(send)
            return
        held = [announced]  # bytes reserved for this request, given back when it is answered
        try:
            await self._read(scope, receive, send, held)
        finally:
            self.budget.give(held[0])

    async def _read(self, scope: Scope, receive: Any, send: Any, held: list[int]) -> None:
        """Read the body within the budget (``held[0]`` bytes reserved, grown for a chunked
        body), check its type and hand it to the route."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await send_error(send, 413, f"(request): body larger than {self.max_body} "
                                 "bytes", close=True)
                return
            if size > held[0]:  # a chunked body: reserved as it arrives
                if not self.budget.take(size - held[0]):
                    await self._over_budget(send)
                    return
                held[0] = size
            if chunk:
                chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        chunks.clear()  # one copy of the body while the route runs
        if body and scope.get("method", "GET") in _BODY_METHODS:
            ctype = _header(scope, b"content-type")
            ok, wanted = _type_ok(str(scope.get("path", "")), ctype)
            if not ok:
                await send_error(send, 415, f"Content-Type: must be {wanted}")
                return
            charset = None if wanted != "application/json" else json_charset(ctype)
            if charset is not None:
                await send_error(send, 415, f"Content-Type: charset must be utf-8 (JSON bodies "
                                 f"are read as UTF-8), not {charset!r}")
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            message: Message = await receive()
            return message

        await self.app(scope, replay, send)
