"""What a smoke run's HTTP exchanges pass through.

:class:`RecordingTransport` wraps the httpx transport the gateway client uses; each exchange is
summarised (method, path, status, time, masked and truncated bodies; never headers) into an
:class:`ExchangeLog`. The runner marks the log before a step and attaches what came after.

:class:`HistoryTransport`: a run against a real gateway moves real money, so each
money-moving request is recorded in the history like a single command's (begin before it
leaves, complete on the answer). Runs against walletctl's own sandbox (embedded, or
answering ``/_sandbox/health``) are not.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import httpx

from walletctl.client.admin import is_walletctl_sandbox
from walletctl.history.recorder import now_utc, os_user, outcome_of_state
from walletctl.history.store import Completion, HistoryStore, Intent
from walletctl.masking import Masker

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

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


_FOLLOW_UPS = {
    "ecom.capture": "capture",
    "ecom.refund": "refund",
    "ecom.reversalpreauthorization": "reverse",
}


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
        if self._is_sandbox is None and self._profile.is_production:
            self._is_sandbox = False  # always recorded, never probed
        if self._is_sandbox is None:
            origin = f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
            self._is_sandbox = is_walletctl_sandbox(origin, self._inner)
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
                outcome = outcome_of_state(state, op)
        elif status >= 500:
            outcome = "unknown"
        elif status >= 400:
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
