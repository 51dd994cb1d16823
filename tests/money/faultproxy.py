"""A fault proxy of the money tests' own: an HTTP/1.1 reverse proxy on a real loopback port.

``FaultProxy(upstream)`` listens on ``127.0.0.1`` (a free port, ``.url``), forwards every
request to ``upstream`` (method, path and query, headers with ``Host`` fixed, body) and answers
with the upstream's status, headers and body, always with ``Connection: close`` (one request
per connection, so nothing about keep-alive can leak between requests). It serves each client
on its own thread; stdlib only.

Programmable per test (each rule matches a method and a path prefix, ``times`` requests, or
every one with ``times=None``):

* ``drop_after_forward()``: forward, let the upstream commit, then close the client's
  connection without a byte of answer (the client sees the server disconnect); with
  ``blackout=True`` the gateway then "goes away": every later request is answered 503
  without reaching the upstream (so the client's own lookup after the drop cannot settle
  it), until ``clear()``;
* ``status_after_forward(429, headers={"Retry-After": "0"})``: forward (the gateway applies it),
  then answer that status with a gateway-shaped JSON error instead of the real answer
  (``blackout=True`` as above);
* ``rewrite_lookup(fn)``: the parsed JSON of a 200 lookup (``GET /api/v5/apmTransactions``)
  goes through ``fn`` before it is returned;
* ``rewrite_request(fn)``: the parsed JSON body of a POST goes through ``fn`` before it is
  forwarded;
* ``latency(seconds)``: wait before forwarding (or after, ``after_forward=True``).

``requests`` lists every request that reached the upstream (method, path without the query,
parsed JSON body or None), in arrival order; ``posts()`` the POSTs among them; ``refused``
the requests a blackout answered without forwarding.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

FOLLOWUPS = "/api/v5/apmTransactions"

Json = Any
Rewrite = Callable[[Json], Json]

# Hop-by-hop headers (RFC 9110 7.6.1) and the ones the proxy recomputes itself.
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                  "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade",
                  "host", "content-length", "accept-encoding"})


@dataclass(frozen=True)
class Forwarded:
    """One request that reached the upstream."""

    method: str
    path: str
    body: Json
    query: str = ""


@dataclass
class _Rule:
    kind: str  # "drop" | "status" | "latency"
    method: str
    path_prefix: str
    times: int | None
    blackout: bool = False
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    after_forward: bool = False

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method) and path.startswith(self.path_prefix)
                and (self.times is None or self.times > 0))


@dataclass(frozen=True)
class _Upstream:
    scheme: str
    host: str
    port: int
    prefix: str

    @property
    def netloc(self) -> str:
        return f"{self.host}:{self.port}"


class FaultProxy:
    def __init__(self, upstream: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"upstream must be an http:// URL, got {upstream!r}")
        self.upstream = _Upstream(parts.scheme, parts.hostname, parts.port or 80,
                                  parts.path.rstrip("/"))
        self.timeout = timeout
        self.requests: list[Forwarded] = []
        self.refused: list[Forwarded] = []
        self._blackout = False
        self._rules: list[_Rule] = []
        self._lookup_rewrites: list[Rewrite] = []
        self._request_rewrites: list[Rewrite] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # -- programming -------------------------------------------------------------------------

    def drop_after_forward(self, method: str = "POST", path_prefix: str = FOLLOWUPS,
                           times: int | None = 1, *, blackout: bool = False) -> None:
        self._add(_Rule("drop", method, path_prefix, times, blackout=blackout))

    def status_after_forward(self, status: int, times: int | None = 1, *,
                             headers: dict[str, str] | None = None, method: str = "POST",
                             path_prefix: str = FOLLOWUPS, blackout: bool = False) -> None:
        self._add(_Rule("status", method, path_prefix, times, blackout=blackout, status=status,
                        headers=dict(headers or {})))

    def latency(self, seconds: float, *, method: str = "POST", path_prefix: str = FOLLOWUPS,
                times: int | None = None, after_forward: bool = False) -> None:
        self._add(_Rule("latency", method, path_prefix, times, seconds=seconds,
                        after_forward=after_forward))

    def rewrite_lookup(self, fn: Rewrite) -> None:
        with self._lock:
            self._lookup_rewrites.append(fn)

    def rewrite_request(self, fn: Rewrite) -> None:
        with self._lock:
            self._request_rewrites.append(fn)

    def clear(self) -> None:
        """Back to a plain pass-through (the recorded requests are kept)."""
        with self._lock:
            self._rules.clear()
            self._lookup_rewrites.clear()
            self._request_rewrites.clear()
            self._blackout = False

    def posts(self, path_prefix: str = FOLLOWUPS) -> list[Forwarded]:
        with self._lock:
            return [r for r in self.requests
                    if r.method == "POST" and r.path.startswith(path_prefix)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler -----------------------------------------------------------------

    def _add(self, rule: _Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def _take(self, kind: str, method: str, path: str) -> _Rule | None:
        """The first live rule of this kind for the request, one of its ``times`` used."""
        with self._lock:
            for rule in self._rules:
                if rule.kind == kind and rule.matches(method, path):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule
        return None

    def _latencies(self, method: str, path: str, after: bool) -> float:
        with self._lock:
            total = 0.0
            for rule in self._rules:
                if (rule.kind == "latency" and rule.after_forward == after
                        and rule.matches(method, path)):
                    if rule.times is not None:
                        rule.times -= 1
                    total += rule.seconds
            return total

    def _record(self, item: Forwarded) -> None:
        with self._lock:
            self.requests.append(item)

    def _blacked_out(self, item: Forwarded) -> bool:
        with self._lock:
            if self._blackout:
                self.refused.append(item)
            return self._blackout

    def _start_blackout(self) -> None:
        with self._lock:
            self._blackout = True

    def _rewrites(self, which: str) -> list[Rewrite]:
        with self._lock:
            return list(self._lookup_rewrites if which == "lookup" else self._request_rewrites)


def _json_or_none(data: bytes) -> Json:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _error_body(status: int) -> bytes:
    reason = {429: "TooManyRequests", 503: "ServiceUnavailable"}.get(
        status, http.client.responses.get(status, "Error"))
    return json.dumps({"code": f"GEN-{status}", "description": reason,
                       "details": {"message": f"fault proxy: {status} after forwarding"}}
                      ).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is expected here; anything else is shown."""
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._proxy()

    def do_POST(self) -> None:
        self._proxy()

    def do_PUT(self) -> None:
        self._proxy()

    def do_DELETE(self) -> None:
        self._proxy()

    def do_HEAD(self) -> None:
        self._proxy()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _proxy(self) -> None:
        owner = self.owner
        self.close_connection = True
        body = self._read_body()
        path, _, query = self.path.partition("?")
        method = self.command
        if owner._blacked_out(Forwarded(method, path, _json_or_none(body), query)):
            self._answer(503, "", [("Content-Type", "application/json")], _error_body(503),
                         method)
            return
        if method == "POST" and owner._rewrites("request"):
            parsed = _json_or_none(body)
            if parsed is not None:
                for fn in owner._rewrites("request"):
                    parsed = fn(parsed)
                body = json.dumps(parsed).encode()
        drop = owner._take("drop", method, path)
        status_rule = owner._take("status", method, path)
        delay = owner._latencies(method, path, after=False)
        if delay:
            time.sleep(delay)
        status, reason, headers, answer = self._forward(method, body)
        owner._record(Forwarded(method, path, _json_or_none(body), query))
        delay = owner._latencies(method, path, after=True)
        if delay:
            time.sleep(delay)
        if drop is not None:
            # Committed upstream; the client gets no answer at all.
            if drop.blackout:
                owner._start_blackout()
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if status_rule is not None:
            if status_rule.blackout:
                owner._start_blackout()
            status, reason = status_rule.status, ""
            headers = [("Content-Type", "application/json"), *status_rule.headers.items()]
            answer = _error_body(status)
        elif (method == "GET" and path.startswith(FOLLOWUPS) and status == 200
              and owner._rewrites("lookup")):
            parsed = _json_or_none(answer)
            if parsed is not None:
                for fn in owner._rewrites("lookup"):
                    parsed = fn(parsed)
                answer = json.dumps(parsed).encode()
        self._answer(status, reason, headers, answer, method)

    def _answer(self, status: int, reason: str, headers: list[tuple[str, str]], answer: bytes,
                method: str) -> None:
        with contextlib.suppress(OSError):  # the client may be gone (killed, timed out)
            self.send_response(status, reason or None)
            for name, value in headers:
                if name.lower() not in _HOP and name.lower() not in ("date", "server"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.send_header("Connection", "close")
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(answer)

    def _forward(self, method: str, body: bytes
                 ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        up = self.owner.upstream
        conn = http.client.HTTPConnection(up.host, up.port, timeout=self.owner.timeout)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            headers["Host"] = up.netloc
            headers["Accept-Encoding"] = "identity"  # so lookups can be rewritten as JSON
            headers["Connection"] = "close"
            if body or method in ("POST", "PUT"):
                headers["Content-Length"] = str(len(body))
            conn.request(method, up.prefix + self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.reason, resp.getheaders(), data
        finally:
            conn.close()
