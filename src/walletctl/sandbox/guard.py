"""Who may talk to the sandbox, and from where (pure ASGI middleware).

Route classes (by path prefix):

* admin - ``/_sandbox/*`` except the wallet emulator (``/_sandbox/wallet/*``, called by
  ``walletpay.js`` from merchant pages) and
  ``/_sandbox/health`` (readiness; reveals nothing);
* demo API - ``/demo/merchant/api/*``;
* hosted page - ``/pay/*`` (the redirect wallet's approval page and the 3DS challenge);
* everything else (gateway API ``/api/v5/*``, static files, documents).

Rules:

* Size, on every route: a request target plus header names and values over
  ``MAX_HEADER_BYTES`` (64 KiB) is a 431 and the connection closes (the connection protocol,
  :mod:`walletctl.sandbox.protocol`, refuses heads still arriving past the limit; this check
  catches a head that arrived whole in one socket read).
* One of each: a request carrying ``Host``, ``Authorization``, ``Content-Type``,
  ``Content-Length``, ``Origin``, ``X-Sandbox-Token``, ``X-Sandbox-Fault`` or
  ``Sec-Fetch-Site`` more than once is a 400 naming the field (RFC 9112 3.2 for Host; for the
  others, so that no two readers can pick different copies).
* Host, on every route: the ``Host`` header must name a loopback host (``localhost``,
  ``127.0.0.1``, ``[::1]``), the bound address, or the host of the public URL; anything else
  (a DNS-rebinding page) gets 403.
* Origin: admin and demo-API requests, and hosted-page form posts, that carry an ``Origin``
  other than the sandbox's own (or ``Sec-Fetch-Site: cross-site | same-site``) get 403, so a
  web page in the developer's browser cannot reset the ledger or set faults.
* Admin token: when the sandbox has one (always on a non-loopback bind), admin routes need
  ``X-Sandbox-Token: <token>``; else 401.
* Redirects the sandbox makes to itself (e.g. a trailing slash) point at the public URL, never
  at the request's ``Host``.
* HTML answers carry ``Content-Security-Policy: frame-ancestors 'none'``,
  ``X-Frame-Options: DENY`` and ``Referrer-Policy: same-origin``; every answer carries
  ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import hmac
import urllib.parse
from typing import Any, NamedTuple

from starlette.types import Message, Scope

from walletctl.constants import SANDBOX_TOKEN_HEADER
from walletctl.sandbox.config import MAX_HEADER_BYTES, SandboxConfig, is_loopback
from walletctl.sandbox.limits import send_error

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "testserver"})
_TOKEN = SANDBOX_TOKEN_HEADER.lower().encode()
_OPEN_ADMIN = ("/_sandbox/health", "/_sandbox/wallet/")
_HTML_HEADERS = [
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_ACCEPTED_MAX = 1024


def route_class(path: str) -> str | None:
    """``admin``, ``health``, ``emulator``, ``demo``, ``page`` or None (gateway API, static
    files, documents)."""
    if path.startswith("/_sandbox/"):
        if path == "/_sandbox/health":
            return "health"
        return "emulator" if path.startswith(_OPEN_ADMIN[1:]) else "admin"
    if path.startswith("/demo/merchant/api/"):
        return "demo"
    if path.startswith("/pay/"):
        return "page"
    return None


def host_name(value: str) -> str:
    """``Host`` header value -> lower-case host name without port or brackets."""
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


def _origin(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    return f"{parsed.scheme}://{parsed.netloc}".lower()


# Fields a request may carry once (RFC 9110 5.3: a list-less field given twice has no one
# meaning, and two readers could pick different ones): lower-case name -> display name.
_SINGLETONS: dict[bytes, str] = {
    b"host": "Host", b"authorization": "Authorization", b"content-type": "Content-Type",
    b"content-length": "Content-Length", b"origin": "Origin", _TOKEN: SANDBOX_TOKEN_HEADER,
    b"x-sandbox-fault": "X-Sandbox-Fault", b"sec-fetch-site": "Sec-Fetch-Site",
}


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
    """See the module docstring."""

    def __init__(self, app: Any, config: SandboxConfig,
                 max_header_bytes: int = MAX_HEADER_BYTES) -> None:
        self.app = app
        self.config = config
        self.max_header_bytes = max_header_bytes
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
        """The Host rule; ``raw`` is the header's value."""
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
        if size > self.max_header_bytes:  # a complete head; the protocol bounds partial ones
            return 431, (f"(request): request line and headers larger than "
                         f"{self.max_header_bytes} bytes")
        if head.twice is not None:  # RFC 9112 3.2 for Host; one reading for the others
            return 400, (f"{head.twice}: is given more than once (one {head.twice} header "
                         "per request)")
        refusal = self._host_refusal(head.get(b"host"))
        if refusal is not None or kind in (None, "health"):
            return refusal  # gateway, documents, static: Host only
        if kind in ("admin", "demo") or (kind == "page" and scope.get("method") != "GET"):
            given = head.values.get(b"origin")
            origin = None if given is None else given.decode("latin-1")
            own = {o.decode("latin-1") for o in _own_origins(head.get(b"host"))}
            if self.config.public_url:
                own.add(_origin(self.config.public_url))
            if origin is not None and origin.lower() not in own:
                return 403, (f"Origin: {origin[:100]!r} is not this sandbox's origin (admin, "
                             "demo and hosted-page routes refuse cross-site requests)")
            site = head.get(b"sec-fetch-site").decode("latin-1").lower()
            if site in ("cross-site", "same-site"):
                return 403, (f"Sec-Fetch-Site: {site} (admin, demo and hosted-page routes "
                             "refuse cross-site requests)")
        token = self.config.admin_token
        if kind == "admin" and token and not hmac.compare_digest(head.get(_TOKEN),
                                                                token.encode()):
            return 401, (f"{SANDBOX_TOKEN_HEADER}: the sandbox's admin token is required "
                         "(printed by `walletctl sandbox serve`; --admin-token or "
                         "$WALLETCTL_SANDBOX_TOKEN)")
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
