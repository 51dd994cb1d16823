"""The one HTTP client of a walletctl sandbox's admin routes (``/_sandbox/*``): the ``sandbox``
commands, smoke and the pytest plugin reach them through :class:`SandboxAdmin`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any
from urllib.parse import quote

from walletctl.client._httpx import httpx
from walletctl.client.tls import tls_context
from walletctl.constants import SANDBOX_LEDGER_NDJSON, SANDBOX_TOKEN_HEADER
from walletctl.errors import GatewayError, NetworkError, ResponseError, UsageError
from walletctl.models.base import loads

HEALTH = "/_sandbox/health"
RESET = "/_sandbox/reset"
LEDGER = "/_sandbox/ledger"
FAULTS = "/_sandbox/faults"
SEED = "/_sandbox/seed"
CLOCK = "/_sandbox/clock"
THREE_DS_CHALLENGE = "/_sandbox/3ds/challenge"
DRIVER_TOKEN = "/_sandbox/testing/token"  # noqa: S105 - a path
WALLET_TOKEN = "/_sandbox/wallet/token"  # noqa: S105 - a route, not a secret
TIMEOUT = 30.0  # seconds, each admin call


def check_token(token: str | None) -> None:
    """An HTTP header carries printable ASCII only (the token is a secret: never echoed)."""
    if token and not (token.isascii() and token.isprintable()):
        raise UsageError("--admin-token: must be printable ASCII (letters, digits, "
                         "punctuation): it is sent in the X-Sandbox-Token header")


def serve_command(url: str, *extra: str) -> str:
    """The ``walletctl sandbox serve`` line that starts a sandbox where ``url`` points."""
    from urllib.parse import urlsplit

    words = ["walletctl", "sandbox", "serve"]
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # not a URL a sandbox could serve: no address to give
        host = port = None
    if host is not None:
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        if host not in ("127.0.0.1", "localhost"):
            words += ["--host", host]
        words += ["--port", str(port)]
    return "`" + " ".join([*words, *extra]) + "`"


class SandboxUnreachable(NetworkError):
    """No answer from the sandbox (``request``: ``METHOD /path``; ``cause``: the transport
    error's name; when nothing listens, a hint with the ``walletctl sandbox serve`` line)."""

    def __init__(self, message: str, *, request: str, cause: str,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.request = request
        self.cause = cause


class SandboxRefused(GatewayError):
    """The sandbox answered an error status (``request``: ``METHOD /path``), with its
    description and ``details.message`` (``body``: its JSON, else the start of its text)."""

    def __init__(self, status: int, *, request: str, code: str | None = None,
                 description: str | None = None, detail: str | None = None,
                 body: Any = None) -> None:
        super().__init__(status, code=code, description=description, detail=detail, body=body)
        self.request = request


class SandboxAdmin:
    """A running sandbox's admin routes at ``base_url`` (``token``: its X-Sandbox-Token);
    a context manager. A failed call raises :class:`SandboxUnreachable` (no answer, exit 7),
    :class:`SandboxRefused` (an error status) or a ResponseError (no JSON object)."""

    def __init__(self, base_url: str, *, token: str | None = None,
                 transport: httpx.BaseTransport | None = None,
                 timeout: float | httpx.Timeout = TIMEOUT) -> None:
        check_token(token)
        self.base_url = base_url.rstrip("/")
        headers = {"Accept": "application/json"}
        if token:
            headers[SANDBOX_TOKEN_HEADER] = token
        try:
            self._http = httpx.Client(base_url=self.base_url, transport=transport,
                                      timeout=timeout, headers=headers, follow_redirects=False,
                                      verify=tls_context(self.base_url))
        except httpx.InvalidURL as exc:
            host = self.base_url.partition("//")[2].partition("/")[0]
            why = ("an IPv6 host needs its closing ]" if "[" in host and "]" not in host
                   else str(exc))
            raise UsageError(f"not a sandbox URL: {self.base_url[:200]!r} ({why})") from None

    def __enter__(self) -> SandboxAdmin:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- one exchange ----------------------------------------------------------------------

    def send(self, method: str, path: str, *, params: dict[str, str] | None = None,
             json_body: Any = None, timeout: float | None = None) -> httpx.Response:
        """One request and its answer, whatever its status (no answer raises
        :class:`SandboxUnreachable`)."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        with self._unreachable(method, path):
            return self._http.request(method, path, params=params, json=json_body, **extra)

    @contextmanager
    def _unreachable(self, method: str, path: str) -> Iterator[None]:
        url = self.base_url + path
        request = f"{method} {path}"
        try:
            yield
        except httpx.ConnectError:
            raise SandboxUnreachable(f"cannot connect to the sandbox at {url}", request=request,
                                     cause="ConnectError",
                                     hint=f"start it with {serve_command(url)}") from None
        except httpx.HTTPError as exc:
            name = type(exc).__name__
            raise SandboxUnreachable(f"sandbox request failed: {name}", request=request,
                                     cause=name) from None

    def call(self, method: str, path: str, *, params: dict[str, str] | None = None,
             json_body: Any = None, exact: bool = False) -> dict[str, Any]:
        """One request's JSON object (``exact``: its fractions as ``Decimal``)."""
        resp = self.send(method, path, params=params, json_body=json_body)
        data = _json(resp, exact)
        self._refuse_error(resp, method, path, data)
        if not isinstance(data, dict):
            raise ResponseError(f"{method} {path}: the sandbox answered no JSON object")
        return data

    @staticmethod
    def _refuse_error(resp: httpx.Response, method: str, path: str, data: Any) -> None:
        if resp.status_code < 400:
            return
        err = data if isinstance(data, dict) else {}
        details = err.get("details") if isinstance(err.get("details"), dict) else {}
        raise SandboxRefused(resp.status_code, request=f"{method} {path}",
                             code=err.get("code"), description=err.get("description"),
                             detail=(details or {}).get("message"),
                             body=data if data is not None else resp.text[:200])

    # -- the routes ------------------------------------------------------------------------

    @contextmanager
    def ledger(self) -> Iterator[Iterator[dict[str, Any]]]:
        """The sandbox's transactions, oldest first, read (NDJSON) as the caller iterates
        inside the ``with``; an older sandbox's whole JSON document is read whole."""
        with self._unreachable("GET", LEDGER), self._http.stream(
                "GET", LEDGER, headers={"Accept": SANDBOX_LEDGER_NDJSON}) as resp:
            if resp.status_code >= 400:
                resp.read()
                self._refuse_error(resp, "GET", LEDGER, _json(resp))
            yield self._transactions(resp)

    def _transactions(self, resp: httpx.Response) -> Iterator[dict[str, Any]]:
        with self._unreachable("GET", LEDGER):
            rows: Iterator[Any]
            if resp.headers.get("content-type", "").startswith(SANDBOX_LEDGER_NDJSON):
                rows = (json.loads(line) for line in resp.iter_lines() if line.strip())
            else:
                resp.read()
                data = _json(resp)
                if not isinstance(data, dict) or not isinstance(data.get("transactions"),
                                                                list):
                    raise ResponseError(f"GET {LEDGER}: the sandbox answered no ledger")
                rows = iter(data["transactions"])
            try:
                for row in rows:
                    if not isinstance(row, dict):
                        raise ResponseError(f"GET {LEDGER}: a transaction is no JSON object")
                    yield row
            except ValueError:
                raise ResponseError(f"GET {LEDGER}: a line of the ledger is not JSON") from None

    def answers_health(self) -> bool:
        """Whether this is a walletctl sandbox (its health route answers 200)."""
        try:
            return self.send("GET", HEALTH).status_code == 200
        except SandboxUnreachable:
            return False

    def decide(self, reference: str, action: str,
               params: dict[str, str] | None = None) -> dict[str, Any]:
        """Approve, decline or cancel a pending checkout (``params``: its merchantId and
        storeId, when known)."""
        path = f"/_sandbox/checkouts/{quote(reference, safe='')}/{action}"  # '#', '/' quoted
        return self.call("POST", path, params=params, exact=True)


def _json(resp: httpx.Response, exact: bool = False) -> Any:
    """The answer's JSON (``exact``: its fractional numbers as ``Decimal``), or None."""
    try:
        return loads(resp.content) if exact else resp.json()
    except ValueError:
        return None


def is_walletctl_sandbox(base_url: str, transport: httpx.BaseTransport) -> bool:
    """Whether ``base_url`` is a walletctl sandbox, asked over the caller's ``transport``."""
    with SandboxAdmin(base_url, transport=_Borrowed(transport)) as admin:
        return admin.answers_health()


class _Borrowed(httpx.BaseTransport):
    """Another's transport: requests go through it, closing it is left to its owner."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)
