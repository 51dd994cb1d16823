"""The ASGI middleware around every route, outermost first: HEAD as GET, the guard, CORS, body
limits, faults (docs/sandbox.md, "Security model", "Connections and limits", "Faults")."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import urllib.parse
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from walletctl.constants import SANDBOX_TOKEN_HEADER
from walletctl.sandbox.config import (
    HEAD_TOO_LARGE,
    MAX_HEADER_BYTES,
    MAX_LATENCY_MS,
    FaultConfig,
    SandboxConfig,
    SandboxContext,
    is_loopback,
)
from walletctl.sandbox.replies import error_body


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


def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """``send`` adding ``extra`` to the answer's head."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


# -- HEAD ------------------------------------------------------------------------------------


class HeadMiddleware:
    """A HEAD is routed as GET and answered without the body; the app then hears that the
    client has gone, so a streamed body (the ledger) stops at its first part."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = anyio.Event()

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                if ended.is_set():
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
                ended.set()
            await send(message)

        async def receive_head() -> Message:
            received = _GONE
            async with anyio.create_task_group() as group:

                async def from_client() -> None:
                    nonlocal received
                    received = await receive()
                    group.cancel_scope.cancel()

                group.start_soon(from_client)
                await ended.wait()  # the answer is complete: the client has gone for the app
                group.cancel_scope.cancel()
            return received

        await self.app({**scope, "method": "GET"}, receive_head, send_head)


_GONE: Message = {"type": "http.disconnect"}


# -- the guard ---------------------------------------------------------------------------------

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "testserver"})
_TOKEN = SANDBOX_TOKEN_HEADER.lower().encode()
_HTML_HEADERS = [
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_ACCEPTED_MAX = 1024
# Fields a request may carry once (RFC 9110 5.3: a list-less field given twice has no one
# meaning, and two readers could pick different ones): lower-case name -> display name.
_SINGLETONS: dict[bytes, str] = {
    b"host": "Host", b"authorization": "Authorization", b"content-type": "Content-Type",
    b"content-length": "Content-Length", b"origin": "Origin", _TOKEN: SANDBOX_TOKEN_HEADER,
    b"x-sandbox-fault": "X-Sandbox-Fault", b"sec-fetch-site": "Sec-Fetch-Site",
}


def route_class(path: str) -> str | None:
    """``admin``, ``demo``, ``page`` or None (Host checked only: gateway, health, emulator)."""
    if path == "/_sandbox/health" or path.startswith("/_sandbox/wallet/"):
        return None
    if path.startswith("/_sandbox/"):
        return "admin"
    if path.startswith("/demo/merchant/api/"):
        return "demo"
    return "page" if path.startswith("/pay/") else None


def host_name(value: str) -> str:
    """A ``Host`` value's lower-case name without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") > 1:  # a bare IPv6 address
        return value
    return value.partition(":")[0]


def allowed_hosts(config: SandboxConfig) -> frozenset[str]:
    names = set(LOOPBACK_NAMES)
    if config.host and config.host not in ("0.0.0.0", "::"):
        names.add(host_name(config.host))
    if config.public_url:
        parsed = urllib.parse.urlsplit(config.public_url)
        if parsed.hostname:
            names.add(parsed.hostname.lower())
    names.update(h.lower() for h in config.allowed_hosts)
    return frozenset(names)


class _Head(NamedTuple):
    """What the guard reads from a request's headers, in one pass (:func:`_read_head`)."""

    values: dict[bytes, bytes]  # each singleton field given, by lower-case name
    twice: str | None  # a singleton field given more than once
    size: int  # bytes of header names and values

    def get(self, name: bytes) -> bytes:
        return self.values.get(name, b"")


def _read_head(headers: list[tuple[bytes, bytes]]) -> _Head:
    values: dict[bytes, bytes] = {}
    twice: str | None = None
    size = 0
    for key, value in headers:
        size += len(key) + len(value)
        name = key.lower()
        if name in _SINGLETONS:
            if name in values:
                twice = twice or _SINGLETONS[name]
            else:
                values[name] = bytes(value)
    return _Head(values, twice, size)


def _own_origins(host: bytes) -> tuple[bytes, ...]:
    """``http://HOST`` and ``https://HOST`` for the request's (already checked) Host."""
    host = host.strip().lower()
    return (b"http://" + host, b"https://" + host) if host else ()


class GuardMiddleware:
    def __init__(self, app: Any, config: SandboxConfig) -> None:
        self.app = app
        self.config = config
        self._hosts: frozenset[str] = frozenset()
        self._hosts_for: tuple[Any, ...] | None = None
        self._accepted: set[bytes] = set()  # Host values already found to name this sandbox

    def _location(self, value: bytes, own: tuple[bytes, ...]) -> bytes:
        """A redirect to this sandbox, rebuilt on the public URL (relative without one)."""
        for origin in own:
            if value.lower().startswith(origin) and value[len(origin):len(origin) + 1] in (
                    b"/", b"?", b""):
                base = (self.config.public_url or "").rstrip("/").encode("latin-1")
                return base + (value[len(origin):] or b"/")
        return value

    def _host_refusal(self, raw: bytes) -> tuple[int, str] | None:
        config = self.config
        key = (config.host, config.public_url, config.allowed_hosts)
        if key != self._hosts_for:  # the names change only with the configuration
            self._hosts, self._hosts_for = allowed_hosts(config), key
            self._accepted.clear()
        if raw in self._accepted:  # the common case: the Host of every earlier request
            return None
        host = raw.decode("latin-1")
        name = host_name(host)
        if not name:
            return 403, "Host: is required (the sandbox's name, e.g. localhost:PORT)"
        if name not in self._hosts and not (is_loopback(name) and is_loopback(config.host)):
            return 403, (f"Host: {host[:100]!r} is not a name of this sandbox (use localhost "
                         "or its --public-url)")
        if len(self._accepted) >= _ACCEPTED_MAX:  # names with any port: keep it bounded
            self._accepted.clear()
        self._accepted.add(raw)
        return None

    def _refusal(self, scope: Scope, kind: str | None, head: _Head) -> tuple[int, str] | None:
        size = head.size + len(scope.get("raw_path") or b"") + len(scope["query_string"])
        if size > MAX_HEADER_BYTES:  # a complete head; the protocol bounds partial ones
            return 431, HEAD_TOO_LARGE
        if head.twice is not None:  # RFC 9112 3.2 for Host; one reading for the others
            return 400, (f"{head.twice}: is given more than once (one {head.twice} header "
                         "per request)")
        refusal = self._host_refusal(head.get(b"host"))
        if refusal is not None or kind is None:
            return refusal  # gateway, documents, static: Host only
        if kind in ("admin", "demo") or (kind == "page" and scope.get("method") != "GET"):
            refusal = self._cross_site_refusal(head)
            if refusal is not None:
                return refusal
        token = self.config.admin_token
        if kind == "admin" and token and not hmac.compare_digest(head.get(_TOKEN),
                                                                token.encode()):
            return 401, (f"{SANDBOX_TOKEN_HEADER}: the sandbox's admin token is required "
                         "(printed by `walletctl sandbox serve`; --admin-token or "
                         "$WALLETCTL_SANDBOX_TOKEN)")
        return None

    def _cross_site_refusal(self, head: _Head) -> tuple[int, str] | None:
        given = head.values.get(b"origin")
        origin = None if given is None else given.decode("latin-1")
        own = {o.decode("latin-1") for o in _own_origins(head.get(b"host"))}
        if self.config.public_url:
            public = urllib.parse.urlsplit(self.config.public_url)
            own.add(f"{public.scheme}://{public.netloc}".lower())
        if origin is not None and origin.lower() not in own:
            return 403, (f"Origin: {origin[:100]!r} is not this sandbox's origin (admin, "
                         "demo and hosted-page routes refuse cross-site requests)")
        site = head.get(b"sec-fetch-site").decode("latin-1").lower()
        if site in ("cross-site", "same-site"):
            return 403, (f"Sec-Fetch-Site: {site} (admin, demo and hosted-page routes "
                         "refuse cross-site requests)")
        return None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = route_class(str(scope.get("path", "")))
        head = _read_head(scope["headers"])
        refusal = self._refusal(scope, kind, head)
        if refusal is not None:
            await send_error(send, refusal[0], refusal[1], headers=[_NOSNIFF],
                             close=refusal[0] == 431)
            return

        async def send_secure(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if 300 <= int(message.get("status", 200)) < 400:
                    own = _own_origins(head.get(b"host"))
                    headers = [(k, self._location(bytes(v), own))
                               if bytes(k).lower() == b"location" else (k, v)
                               for k, v in headers]
                ctype, nosniff = b"", False  # one pass over the answer's headers
                for name, value in headers:
                    name = bytes(name).lower()
                    if name == b"content-type":
                        ctype = bytes(value)
                    elif name == _NOSNIFF[0]:
                        nosniff = True
                extra = [] if nosniff else [_NOSNIFF]  # once, even when the route set it
                if ctype.lower().startswith(b"text/html"):
                    extra += _HTML_HEADERS
                message = {**message, "headers": headers + extra}
            await send(message)

        await self.app(scope, receive, send_secure)


# -- CORS for the browser wallet -------------------------------------------------------------

CORS_ROUTES: dict[str, tuple[str, ...]] = {
    "/walletpay.js": ("GET", "HEAD"),
    "/wallet/cards": ("GET",),
    "/wallet/token": ("POST",),
    "/wallet/testing/redeem": ("POST",),
    "/api/v5/publicKeys/current": ("GET",),
    "/api/v5/paymentAccounts": ("POST",),
}
_PREFLIGHT = [(b"access-control-allow-headers", b"Authorization, Content-Type, Accept"),
              (b"access-control-max-age", b"600"), (b"vary", b"Origin"),
              (b"content-length", b"0")]


class CorsMiddleware:
    def __init__(self, app: ASGIApp, allowed_origins: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.allowed = allowed_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        methods = CORS_ROUTES.get(scope.get("path", "")) if scope["type"] == "http" else None
        origin = _header(scope, b"origin") or ""
        if methods is None or not origin:
            await self.app(scope, receive, send)
            return
        allow = "*" if self.allowed is None else origin if origin in self.allowed else None
        requested = _header(scope, b"access-control-request-method") or ""
        preflight = scope["method"] == "OPTIONS" and requested
        if allow is None or (preflight and requested.upper() not in methods):
            why = (f"Origin: {origin} is not allowed (sandbox serve --allow-origin)"
                   if allow is None else f"{requested}: method not allowed on this route")
            await send_error(send, 403, why, description="OriginNotAllowed")
            return
        if preflight:
            await send({"type": "http.response.start", "status": 204, "headers": [
                (b"access-control-allow-origin", allow.encode("latin-1")),
                (b"access-control-allow-methods", ", ".join(methods).encode()), *_PREFLIGHT]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, _with_headers(send, [
            (b"access-control-allow-origin", allow.encode("latin-1")), (b"vary", b"Origin")]))


# -- request bodies ----------------------------------------------------------------------------

MAX_BODY = 1_000_000
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def json_charset(value: str | None) -> str | None:
    """The ``charset`` of a ``Content-Type`` when it is not UTF-8 (None: absent or utf-8)."""
    for param in (value or "").split(";")[1:]:
        name, _, given = param.partition("=")
        if name.strip().lower() == "charset":
            charset = given.strip().strip('"').strip().lower()
            if charset != "utf-8":
                return charset[:40] or "(empty)"
    return None


def _type_ok(path: str, value: str | None) -> tuple[bool, str]:
    mt = (value or "").split(";", 1)[0].strip().lower()
    if path.startswith("/pay/"):
        return mt == "application/x-www-form-urlencoded", "application/x-www-form-urlencoded"
    return mt == "application/json" or (mt.startswith("application/") and
                                         mt.endswith("+json")), "application/json"


def _announced(length: str | None) -> int | None:
    """A request's Content-Length (0 without one; None: not digits), sized from its digits
    (no int() of any length: anything longer than MAX_BODY's digits is MAX_BODY + 1)."""
    if length is None:
        return 0
    text = length.strip()
    if not text.isascii() or not text.isdigit():
        return None
    text = text.lstrip("0") or "0"
    return int(text) if len(text) <= len(str(MAX_BODY)) else MAX_BODY + 1


TOO_LARGE: Final = "too large"  # read_body: the body passed MAX_BODY
OVER_BUDGET: Final = "over budget"  # read_body: ``reserve`` refused the body's next bytes


async def read_body(receive: Any, reserve: Callable[[int], bool] | None = None
                    ) -> bytes | str | None:
    """A request's whole body as it arrives, for every app on the sandbox's stack (the
    sandbox's body limit, the proxy, a replay): None when the client left, ``TOO_LARGE``
    beyond MAX_BODY, ``OVER_BUDGET`` when ``reserve(size)`` (told the bytes read so far)
    would not hold them. One copy of the body, never more than MAX_BODY of it."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return TOO_LARGE
        if reserve is not None and not reserve(size):
            return OVER_BUDGET
        if chunk:
            chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)


def _type_problem(scope: Scope) -> str | None:
    """Why a body's Content-Type is refused (415), if it is."""
    if scope.get("method", "GET") not in _BODY_METHODS:
        return None
    ctype = _header(scope, b"content-type")
    ok, wanted = _type_ok(str(scope.get("path", "")), ctype)
    if not ok:
        return f"Content-Type: must be {wanted}"
    charset = None if wanted != "application/json" else json_charset(ctype)
    if charset is not None:
        return ("Content-Type: charset must be utf-8 (JSON bodies are read as UTF-8), not "
                f"{charset!r}")
    return None


class BodyLimitMiddleware:
    def __init__(self, app: Any, body_budget: int) -> None:
        self.app = app
        # the body budget (SandboxConfig.body_budget); the event loop is its only user: no lock
        self.budget, self.held = body_budget, 0

    def _take(self, size: int) -> bool:
        if self.held + size > self.budget:
            return False
        self.held += size
        return True

    async def _too_large(self, send: Any) -> None:
        await send_error(send, 413, f"(request): body larger than {MAX_BODY} bytes",
                         close=True)

    async def _over_budget(self, send: Any) -> None:
        await send_error(send, 503, f"(request): the sandbox holds {self.budget} bytes "
                         "of request bodies at once, across all connections, and this one "
                         "does not fit now; try again shortly", close=True,
                         headers=[(b"retry-after", b"1")])

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        announced = _announced(_header(scope, b"content-length"))
        if announced is None:
            await send_error(send, 400, "Content-Length: must be a whole number of bytes",
                             close=True)
            return
        if announced > MAX_BODY:
            await self._too_large(send)
            return
        if not self._take(announced):
            await self._over_budget(send)
            return
        held = announced  # bytes reserved for this request, given back when it is answered

        def reserve(size: int) -> bool:  # a chunked body: reserved as it arrives
            nonlocal held
            if size > held:
                if not self._take(size - held):
                    return False
                held = size
            return True

        try:
            body = await read_body(receive, reserve)
            if body is None:
                return
            if isinstance(body, str):
                await (self._too_large(send) if body == TOO_LARGE else self._over_budget(send))
                return
            if body and (problem := _type_problem(scope)) is not None:
                await send_error(send, 415, problem)
                return
            unread: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

            async def replay() -> Message:  # the body once, then the client's next message
                return unread.pop() if unread else await receive()

            await self.app(scope, replay, send)
        finally:
            self.held -= held


# -- faults ------------------------------------------------------------------------------------

_DROP_LOG = "ASGI callable returned without completing response."


class _QuietDrop(logging.Filter):
    """uvicorn logs an error for the deliberately incomplete response: say it plainly."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == _DROP_LOG:
            self._plain(record, "fault injected: response dropped after commit")
        elif record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            # the server stops after its one-second grace: a route still running (a seed in
            # its worker thread) is ended; one line, no traceback
            self._plain(record, "stopping: a request still running was ended")
            record.exc_info = record.exc_text = None
        return True

    @staticmethod
    def _plain(record: logging.LogRecord, message: str) -> None:
        record.msg = message
        record.args = ()
        record.levelno = logging.INFO
        record.levelname = "INFO"


def install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrop) for f in logger.filters):
        logger.addFilter(_QuietDrop())


def _applied(fault: str) -> tuple[bytes, bytes]:
    return b"x-sandbox-fault-applied", fault.encode()


class FaultMiddleware:
    def __init__(self, app: Any, ctx: SandboxContext) -> None:
        self.app = app
        self.ctx = ctx

    def _faults(self, scope: Scope) -> FaultConfig:
        """The request's ``X-Sandbox-Fault`` (on a loopback host only), else the server's."""
        header = _header(scope, b"x-sandbox-fault")
        if header is None or not is_loopback(self.ctx.config.host):
            return self.ctx.faults
        return FaultConfig.parse_header(header)

    async def _delayed(self, seconds: float) -> bool:
        """Wait ``seconds`` (an injected latency); False as soon as the server stops."""
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while not self.ctx.stopping:
            left = end - loop.time()
            if left <= 0:
                return True
            await asyncio.sleep(min(left, 0.05))
        return False

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/api/v5"):
            await self.app(scope, receive, send)
            return
        try:
            faults = self._faults(scope)
        except ValueError as exc:
            await send_error(send, 400, f"X-Sandbox-Fault: {exc}")
            return
        if not faults.active:
            await self.app(scope, receive, send)
            return
        rng = self.ctx.rng(faults.seed)
        r_throttle, r_error, r_drop, r_after, r_jitter = (rng.random() for _ in range(5))
        delay_ms = faults.latency_ms + (2 * r_jitter - 1) * faults.jitter_ms
        delay_ms = min(max(delay_ms, 0.0), float(MAX_LATENCY_MS))
        if delay_ms and not await self._delayed(delay_ms / 1000):
            await send_error(send, 503, "(request): the sandbox is stopping", close=True)
            return
        if r_throttle < faults.throttle_rate:
            await send_error(
                send, 429, f"rate limit exceeded (sandbox fault); retry after "
                f"{faults.retry_after} s",
                headers=[(b"retry-after", str(faults.retry_after).encode()), _applied("throttle")],
            )
        elif r_error < faults.error_rate:
            await send_error(send, faults.error_status,
                             "injected failure before commit (sandbox fault)",
                             headers=[_applied("error")])
        elif r_drop < faults.drop_rate:
            await _drop_mid_answer(self.app, scope, receive, send)
        elif r_after < faults.error_after_rate:
            await self.app(scope, receive, _discard)  # the route commits its work here
            await send_error(send, faults.error_status,
                             "injected failure after commit (sandbox fault)",
                             headers=[_applied("error-after")])
        else:
            await self.app(scope, receive, _with_headers(send, [
                _applied(f"latency={delay_ms:.0f}ms")]) if delay_ms else send)


async def _discard(message: Message) -> None:
    pass


async def _drop_mid_answer(app: Any, scope: Scope, receive: Any, send: Any) -> None:
    """Run the route (it commits its work), then send half its body under a longer
    ``Content-Length`` and return mid-body, which makes the server close the connection."""
    captured: list[Message] = []

    async def capture(message: Message) -> None:
        captured.append(message)

    await app(scope, receive, capture)
    start = next((m for m in captured if m["type"] == "http.response.start"), None)
    body = b"".join(m.get("body", b"") for m in captured if m["type"] == "http.response.body")
    status = start["status"] if start else 200
    headers = [(k, v) for k, v in (start or {}).get("headers", []) if k != b"content-length"]
    headers.append((b"content-length", str(len(body) + 4096).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body[: len(body) // 2],
                "more_body": True})
