"""Request body limits and content types, enforced while reading (pure ASGI middleware).

* A body larger than :data:`MAX_BODY` bytes is answered 413 as soon as that is known: at
  once from ``Content-Length``, else when the streamed (chunked) body passes the limit. The
  server never holds more than the limit (plus one chunk) of a request body, whatever is
  sent, and closes the connection after the 413.
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


class BodyLimitMiddleware:
    """See the module docstring."""

    def __init__(self, app: Any, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None:
            text = length.strip()
            if not text.isascii() or not text.isdigit():
                await send_error(send, 400, "Content-Length: must be a whole number of bytes",
                                 close=True)
                return
            if int(text) > self.max_body:
                await send_error(send, 413, f"(request): body larger than {self.max_body} "
                                 "bytes", close=True)
                return
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
            if chunk:
                chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
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
