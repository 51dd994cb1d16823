"""CORS for the browser wallet: the routes ``walletpay.js`` calls from a merchant's origin.

Only these routes answer cross-origin (:data:`CORS_ROUTES`); every other route (``/_sandbox/*``
admin, the demo merchant's server, hosted pages, the merchant-server APIs) never gets a CORS
header, so a browser on another origin cannot read them. No cookies are involved (the key
travels in the ``Authorization`` header), so ``Access-Control-Allow-Credentials`` is never sent.

``allowed_origins``: ``None`` = any origin (``Access-Control-Allow-Origin: *``); else only the
listed ``scheme://host[:port]`` origins (echoed, with ``Vary: Origin``); a request or preflight
from another origin gets 403 with a gateway error object.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from walletctl.sandbox.limits import send_error

CORS_ROUTES: dict[str, tuple[str, ...]] = {
    "/walletpay.js": ("GET", "HEAD"),
    "/wallet/cards": ("GET",),
    "/wallet/token": ("POST",),
    "/api/v5/publicKeys/current": ("GET",),
    "/api/v5/paymentAccounts": ("POST",),
}
ALLOW_HEADERS = "Authorization, Content-Type, Accept"
MAX_AGE = "600"


def parse_origin(value: str) -> str:
    """``value`` as a normalized origin; ValueError naming the rule otherwise."""
    text = value.strip()
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or port == -1 or \
            parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"--allow-origin {value!r}: must be an origin like "
                         "https://shop.example or http://localhost:8000 (scheme, host, "
                         "optional port; no path)")
    origin = f"{parts.scheme.lower()}://{parts.hostname.lower()}"
    return origin + (f":{port}" if port is not None else "")


def parse_origins(values: Iterable[str]) -> tuple[str, ...] | None:
    """``--allow-origin`` values -> allowed origins; ``None`` (any) for none or ``*``."""
    items = [v for v in values if v.strip()]
    if not items or any(v.strip() == "*" for v in items):
        return None
    return tuple(dict.fromkeys(parse_origin(v) for v in items))


class CorsMiddleware:
    """Pure ASGI middleware (outermost, so fault-injected answers carry the headers too)."""

    def __init__(self, app: ASGIApp, allowed_origins: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.allowed = allowed_origins

    def _allow_value(self, origin: str) -> str | None:
        if self.allowed is None:
            return "*"
        return origin if origin in self.allowed else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        methods = CORS_ROUTES.get(scope.get("path", "")) if scope["type"] == "http" else None
        headers = dict(scope.get("headers") or ())
        origin = headers.get(b"origin", b"").decode("latin-1")
        if methods is None or not origin:
            await self.app(scope, receive, send)
            return
        allow = self._allow_value(origin)
        requested = headers.get(b"access-control-request-method", b"").decode("latin-1")
        if scope["method"] == "OPTIONS" and requested:
            if allow is None or requested.upper() not in methods:
                why = (f"Origin: {origin} is not allowed (sandbox serve --allow-origin)"
                       if allow is None else f"{requested}: method not allowed on this route")
                await send_error(send, 403, why, description="OriginNotAllowed")
                return
            await send({"type": "http.response.start", "status": 204, "headers": [
                (b"access-control-allow-origin", allow.encode("latin-1")),
                (b"access-control-allow-methods", ", ".join(methods).encode()),
                (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
                (b"access-control-max-age", MAX_AGE.encode()),
                (b"vary", b"Origin"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if allow is None:
            await send_error(send, 403, f"Origin: {origin} is not allowed (sandbox serve "
                             "--allow-origin)", description="OriginNotAllowed")
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"access-control-allow-origin", allow.encode("latin-1")),
                         (b"vary", b"Origin")]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

