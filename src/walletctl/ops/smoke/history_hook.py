"""Smoke runs against a real gateway move real money: each money-moving request is recorded
in the history like a single command's (begin before it leaves, complete on the answer).

Runs against walletctl's own sandbox (embedded, or answering ``/_sandbox/health``) are not.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

from walletctl.client.admin import is_walletctl_sandbox
from walletctl.history.recorder import now_utc, os_user
from walletctl.history.store import Completion, HistoryStore, Intent
from walletctl.models.outcome import history_outcome as outcome_of_state

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

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
        import socket

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
        try:
            raw = b"".join(response.stream)  # type: ignore[arg-type]
        finally:
            response.close()
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
        return httpx.Response(status, headers=response.headers, stream=httpx.ByteStream(raw),
                              extensions=response.extensions, request=request)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        self._inner.close()


def _major(value: Any, currency: str, profile: Profile) -> str | None:
    if value is None:
        return None
    try:
        from walletctl.models.money import from_wire

        return format(from_wire(value, currency, profile.amount_format), "f")
    except (ValueError, ArithmeticError, TypeError):
        return str(value)[:32]
