"""What a smoke run talks to (:class:`Target`): the gateway client and the sandbox admin
client over one :class:`RecordingTransport` (every exchange, masked, in an :class:`ExchangeLog`),
the checkout approver, and against a real gateway :class:`HistoryTransport`."""

from __future__ import annotations

import json
import os
import secrets as _secrets
import shlex
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from walletctl.client.admin import (
    SandboxAdmin,
    SandboxRefused,
    SandboxUnreachable,
    is_walletctl_sandbox,
)
from walletctl.config.profile import AuthSettings, Profile
from walletctl.errors import ConfigError, ResponseError, UsageError
from walletctl.history.recorder import os_user
from walletctl.history.store import Completion, HistoryStore, Intent
from walletctl.masking import Masker
from walletctl.models.entries import now_utc
from walletctl.models.operations import FOLLOW_UPS
from walletctl.models.outcome import find_record, history_outcome
from walletctl.ops.smoke import StepFailed, StepSkipped

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.smoke import SmokeOptions

ENV_REDIRECT_URL = "WALLETCTL_SMOKE_REDIRECT_URL"
ENV_REFERENCE = "WALLETCTL_SMOKE_REFERENCE"
PENDING = "Pending"


@dataclass
class Target:
    profile: Profile
    client: GatewayClient
    admin: SandboxAdmin  # admin routes of a walletctl sandbox (same recording transport)
    masker: Masker
    currency: str
    options: SmokeOptions  # the approver and the timeouts
    _is_sandbox: bool | None = field(default=None, repr=False)

    # -- approval -------------------------------------------------------------------------
    def approve(self, reference: str, redirect_url: str) -> str:
        """Approve the customer's side of a checkout; returns a one-line detail."""
        if self.options.approve_command:
            return self._approve_with_command(reference, redirect_url)
        if self.profile.is_production:  # never a sandbox's admin route on a production gateway
            raise StepSkipped(
                "a production profile: a person approves the checkout (no headless approval); "
                "pass --approve-url-command CMD to supply an approver")
        ids = {"merchantId": self.profile.merchant_id, "storeId": self.profile.store_id}
        try:
            data = self.admin.decide(reference, "approve", ids)
        except SandboxRefused as exc:
            if exc.status == 404 and not self.is_walletctl_sandbox():
                raise StepSkipped(
                    "this gateway has no headless approval (not a walletctl sandbox): a person "
                    "or a browser must approve; pass --approve-url-command CMD to supply an "
                    "approver") from None
            raise StepFailed(f"headless approval of {reference} answered HTTP {exc.status}: "
                             f"{_error_text(exc)}") from None
        except SandboxUnreachable as exc:
            raise StepFailed(f"{exc.request}: no answer ({exc.cause})") from None
        except ResponseError as exc:
            raise StepFailed(f"headless approval of {reference}: {exc.message}") from None
        state = data.get("state")
        return "approved headlessly by the sandbox" + (f" (state {state})" if state else "")

    def is_walletctl_sandbox(self) -> bool:
        if self._is_sandbox is None:  # production is not even probed
            self._is_sandbox = not self.profile.is_production and self.admin.answers_health()
        return self._is_sandbox

    def _approve_with_command(self, reference: str, redirect_url: str) -> str:
        assert self.options.approve_command is not None
        argv = [*shlex.split(self.options.approve_command), redirect_url]
        env = {**os.environ, ENV_REDIRECT_URL: redirect_url, ENV_REFERENCE: reference}
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=self.options.approve_timeout, check=False)
        except FileNotFoundError:
            raise UsageError(f"--approve-url-command: {argv[0]!r} was not found") from None
        except subprocess.TimeoutExpired:
            raise StepFailed(f"the approver command did not finish within "
                             f"{self.options.approve_timeout:g} s") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
            said = (": " + " | ".join(tail)) if tail else ""
            raise StepFailed(f"the approver command exited with status {done.returncode}{said}")
        return "approved by --approve-url-command"

    # -- lookups --------------------------------------------------------------------------
    def settled_records(self, reference: str) -> list[TransactionRecord]:
        """Look ``reference`` up, polling while its original is still ``Pending``."""
        deadline = time.monotonic() + self.options.settle_timeout
        delay = 0.2
        while True:
            records = self.client.lookup(reference)
            original = find_record(records, reference)
            if original is None or original.state != PENDING or time.monotonic() >= deadline:
                return records
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def close(self) -> None:
        self.client.close()
        self.admin.close()


def _error_text(refused: SandboxRefused) -> str:
    """The sandbox's ``details.message`` or description, else what it answered."""
    body: Any = refused.body
    if isinstance(body, str):  # not JSON: the start of its text
        return body[:200] or "(empty body)"
    if isinstance(body, dict):
        return str(refused.detail or refused.description or body)[:200]
    return str(body)[:200]


def known_secrets(profile: Profile) -> list[str]:
    """The profile's secrets (resolved now: a missing one is a ConfigError before any step)."""
    from walletctl.client.answer_guard import credential_parts
    from walletctl.config.secrets import auth_header, service_basic_auth

    found: list[str] = []
    try:
        service = service_basic_auth(profile)
    except ConfigError:
        service = None  # only the browser-wallet scenario needs it; it reports it then
    for header in (auth_header(profile), service):  # each header, its token, a password
        if header is not None:
            found.extend(credential_parts(header[1]))
    if profile.auth.key:
        found.append(profile.auth.key)
    return found


def admin_token(profile: Profile, embedded: bool) -> str | None:
    """The admin token smoke sends to a walletctl sandbox's admin routes (a ConfigError before
    any step when the profile names a variable that is not set); none to production."""
    from walletctl.config.secrets import sandbox_admin_token

    if embedded or profile.is_production:
        return None
    return sandbox_admin_token(profile)


@contextmanager
def open_target(profile: Profile, masker: Masker, log: ExchangeLog, options: SmokeOptions, *,
                transport: httpx.BaseTransport | None = None,
                trace: Callable[[str], None] | None = None, embedded: bool = False,
                history_run: str | None = None) -> Iterator[Target]:
    """A :class:`Target` for ``profile`` whose HTTP exchanges go to ``log`` (masked)."""
    from walletctl.client.gateway import GatewayClient, profile_timeout
    from walletctl.models.money import check_currency

    token = admin_token(profile, embedded)
    for secret in [*known_secrets(profile), *([token] if token else [])]:
        masker.add(secret)
    try:
        cur = check_currency(options.currency or profile.currency or "EUR")
    except ValueError as exc:
        raise UsageError(f"--currency: {exc}") from None
    inner = transport or environment_transport(profile.base_url)
    if history_run is not None and not embedded:  # real money: recorded in the history
        inner = HistoryTransport(inner, profile, history_run)
    recording = RecordingTransport(inner, log)
    client = GatewayClient(profile, transport=recording, trace=trace)
    admin = SandboxAdmin(profile.base_url, token=token, transport=recording,
                         timeout=profile_timeout(profile))
    target = Target(profile=profile, client=client, admin=admin, masker=masker, currency=cur,
                    options=options, _is_sandbox=True if embedded else None)
    try:
        yield target
    finally:
        target.close()


@contextmanager
def embedded_sandbox(*, amount_format: str = "minor") -> Iterator[Profile]:
    """A private sandbox on a free loopback port for the duration; yields its profile (a
    per-run random key; the checkout step gives the redirect URLs)."""
    from walletctl.ops.sandbox_admin import embedded

    secret = "smoke-" + _secrets.token_urlsafe(18)
    with embedded(api_key=secret, service_secret=secret, amount_format=amount_format) as url:
        yield Profile(
            name="embedded", base_url=url, merchant_id="SMOKE-MERCHANT", store_id="SMOKE-STORE",
            user_id="smoke-bot", amount_format="decimal" if amount_format == "decimal"
            else "minor", currency="EUR", timeout=15.0,
            auth=AuthSettings(scheme="PublicApiKey", key=secret))


def environment_transport(base_url: str) -> httpx.HTTPTransport:
    """A transport that honours the proxy variables as httpx's own default does (httpx reads
    them only for a transport it builds); loopback is never proxied."""
    import urllib.request
    from urllib.parse import urlsplit

    from walletctl.sandbox.config import is_loopback

    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if is_loopback(host) or urllib.request.proxy_bypass(host):
        return httpx.HTTPTransport()
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return httpx.HTTPTransport(proxy=proxy) if proxy else httpx.HTTPTransport()


# -- what the exchanges pass through -----------------------------------------------------------

BODY_LIMIT = 600


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str  # path + query (no host, no credentials)
    status: int | None  # None: no response (connection error / timeout)
    duration: float
    request: str | None  # masked, truncated body
    response: str | None  # masked, truncated body, or the transport error

    def summary(self) -> str:
        status = str(self.status) if self.status is not None else "no response"
        lines = [f"{self.method} {self.path} -> {status} ({self.duration * 1000:.0f} ms)"]
        if self.request:
            lines.append(f"  request:  {self.request}")
        if self.response:
            lines.append(f"  response: {self.response}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration": round(self.duration, 4)}


class ExchangeLog:
    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._items: list[Exchange] = []

    def mark(self) -> int:
        return len(self._items)

    def since(self, mark: int) -> list[Exchange]:
        return list(self._items[mark:])

    def all(self) -> list[Exchange]:
        return list(self._items)

    def record(self, request: httpx.Request, status: int | None, duration: float,
               response_body: bytes | str | None, content_type: str = "") -> None:
        try:
            req_body = request.content
        except httpx.RequestNotRead:  # a streamed upload: not summarised
            req_body = b""
        path = request.url.raw_path.decode("ascii", "replace")
        self._items.append(Exchange(
            method=request.method, path=self.masker.text(path), status=status,
            duration=duration,
            request=self._body(req_body, request.headers.get("content-type", "")),
            response=self._body(response_body, content_type)))

    def _body(self, body: bytes | str | None, content_type: str) -> str | None:
        if not body:
            return None
        text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        if "json" in content_type or text[:1] in "[{":
            try:
                data = json.loads(text)
            except ValueError:
                pass
            else:
                self.masker.add_from(data)
                text = json.dumps(self.masker.data(data), separators=(",", ":"))
        text = self.masker.text(text.replace("\n", " "))
        if len(text) > BODY_LIMIT:
            text = text[:BODY_LIMIT] + f"... ({len(text) - BODY_LIMIT} more characters)"
        return text


def _whole(response: httpx.Response) -> bytes:
    """The answer's body as it came over the wire (read once; the response closed)."""
    try:
        return b"".join(response.stream)  # type: ignore[arg-type]
    finally:
        response.close()


def _again(response: httpx.Response, raw: bytes, request: httpx.Request) -> httpx.Response:
    """``response`` once more, its body ``raw``, for the client that sent ``request``."""
    return httpx.Response(response.status_code, headers=response.headers,
                          stream=httpx.ByteStream(raw), extensions=response.extensions,
                          request=request)


class RecordingTransport(httpx.BaseTransport):
    """A sync transport that forwards to ``inner`` and records a summary of each exchange."""

    def __init__(self, inner: httpx.BaseTransport, log: ExchangeLog) -> None:
        self._inner = inner
        self._log = log

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = time.perf_counter()
        try:
            response = self._inner.handle_request(request)
        except Exception as exc:
            self._log.record(request, None, time.perf_counter() - start, type(exc).__name__)
            raise
        raw = _whole(response)
        duration = time.perf_counter() - start
        decoded = httpx.Response(response.status_code, headers=response.headers,
                                 stream=httpx.ByteStream(raw))
        try:
            body: bytes | None = decoded.read()
        except httpx.DecodingError:
            body = None
        self._log.record(request, response.status_code, duration, body,
                         response.headers.get("content-type", ""))
        return _again(response, raw, request)

    def close(self) -> None:
        self._inner.close()


_FOLLOW_UPS = {op.wire_type.lower(): op.name for op in FOLLOW_UPS}


class HistoryTransport(httpx.BaseTransport):
    """Forwards to ``inner``; records POSTs to the money-moving paths."""

    def __init__(self, inner: httpx.BaseTransport, profile: Profile, run_id: str) -> None:
        self._inner = inner
        self._profile = profile
        self._run = run_id
        self._paths = {
            profile.path("checkout"): "checkout",
            profile.path("apm_transactions"): None,  # by the body's type
            profile.path("transactions"): "authorize",
        }
        self._is_sandbox: bool | None = None
        self._store: HistoryStore | None = None

    def _sandbox(self, request: httpx.Request) -> bool:
        if self._is_sandbox is None:  # production is always recorded, never probed
            origin = f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
            self._is_sandbox = (not self._profile.is_production
                                and is_walletctl_sandbox(origin, self._inner))
        return self._is_sandbox

    def _intent(self, request: httpx.Request) -> Intent | None:
        path = request.url.path
        if request.method != "POST" or path not in self._paths or self._sandbox(request):
            return None
        try:
            body: dict[str, Any] = json.loads(request.content)
        except (ValueError, httpx.RequestNotRead):
            return None
        op = self._paths[path] or _FOLLOW_UPS.get(str(body.get("type", "")).lower())
        if op is None:
            return None
        currency = str(body.get("currencyCode") or "")
        amount = _major(body.get("amount"), currency, self._profile)
        return Intent(
            time=now_utc(), os_user=os_user(), host=socket.gethostname(),
            profile=self._profile.name, base_url=self._profile.base_url, operation=op,
            original_ref=str(body.get("clientSystemInvoiceId")
                             or body.get("clientSystemTransactionId") or ""),
            new_ref=str(body.get("clientSystemTransactionId") or "") or None,
            amount=amount, currency=currency or None, note=f"smoke run {self._run}",
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        intent = self._intent(request)
        if intent is None:
            return self._inner.handle_request(request)
        if self._store is None:
            from walletctl.history import open_for

            self._store = open_for(self._profile)
        entry = self._store.begin(intent)
        try:
            response = self._inner.handle_request(request)
        except httpx.ConnectError:  # the connection was never made: nothing was sent
            self._store.complete(entry, Completion(
                time=now_utc(), outcome="error", note="not sent: no connection (smoke)"))
            raise
        except BaseException:
            self._store.complete(entry, Completion(
                time=now_utc(), outcome="unknown", note="no answer (smoke)"))
            raise
        raw = _whole(response)
        status = response.status_code
        op = intent.operation
        outcome = "created" if op == "checkout" else "approved"
        if status < 400 and not response.headers.get("content-encoding"):
            try:
                state = json.loads(raw).get("state")
            except (ValueError, AttributeError):
                state = None
            if isinstance(state, str):
                outcome = history_outcome(state, op)
        elif status >= 500:
            outcome = "unknown"
        else:
            outcome = "error" if status in (401, 403, 429) else "declined"
        self._store.complete(entry, Completion(
            time=now_utc(), outcome=outcome, http_status=status, note=f"smoke run {self._run}"))
        return _again(response, raw, request)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        self._inner.close()


def _major(value: Any, currency: str, profile: Profile) -> str | None:
    if value is None:
        return None
    from walletctl.models.money import from_wire

    try:
        return format(from_wire(value, currency, profile.amount_format), "f")
    except (ValueError, ArithmeticError, TypeError):
        return str(value)[:32]
