"""Fault injection as a pure ASGI middleware, for ``/api/v5`` routes only.

The faults in force are the server's (flags / ``POST /_sandbox/faults``) unless the request
carries ``X-Sandbox-Fault`` (grammar in :mod:`walletctl.sandbox.config`), which replaces
them for that request. Header faults are honoured only when the sandbox is bound to a
loopback host. Each request draws its random numbers in a fixed order from an RNG kept per
seed, so a seeded run is reproducible.

"Commit then drop": the route runs (its transaction is committed), then the response head
is sent with a ``Content-Length`` larger than the part of the body that follows and the
connection is closed, so an HTTP client sees a protocol/read error, never a status.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.types import Message, Scope

from walletctl.sandbox.config import MAX_LATENCY_MS, FaultConfig, is_loopback
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.limits import send_error

FAULT_HEADER = b"x-sandbox-fault"
_DROP_LOG = "ASGI callable returned without completing response."


class _QuietDrop(logging.Filter):
    """uvicorn logs an error for the deliberately incomplete response: say it plainly."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == _DROP_LOG:
            record.msg = "fault injected: response dropped after commit"
            record.args = ()
            record.levelno = logging.INFO
            record.levelname = "INFO"
        return True


def install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrop) for f in logger.filters):
        logger.addFilter(_QuietDrop())


class FaultMiddleware:
    def __init__(self, app: Any, ctx: SandboxContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/api/v5"):
            await self.app(scope, receive, send)
            return
        faults = self.ctx.faults
        header = next((v for k, v in scope.get("headers", []) if k == FAULT_HEADER), None)
        if header is not None and is_loopback(self.ctx.config.host):
            try:
                faults = FaultConfig.parse_header(header.decode("latin-1"))
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
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        if r_throttle < faults.throttle_rate:
            await send_error(
                send, 429, f"rate limit exceeded (sandbox fault); retry after "
                f"{faults.retry_after} s",
                headers=[(b"retry-after", str(faults.retry_after).encode()),
                         (b"x-sandbox-fault-applied", b"throttle")],
            )
            return
        if r_error < faults.error_rate:
            await send_error(send, faults.error_status,
                             "injected failure before commit (sandbox fault)",
                             headers=[(b"x-sandbox-fault-applied", b"error")])
            return
        drop = r_drop < faults.drop_rate
        after = not drop and r_after < faults.error_after_rate
        if not (drop or after):
            if not delay_ms:
                await self.app(scope, receive, send)
                return

            async def tagged(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [
                        *message.get("headers", []),
                        (b"x-sandbox-fault-applied", f"latency={delay_ms:.0f}ms".encode()),
                    ]}
                await send(message)

            await self.app(scope, receive, tagged)
            return
        captured: list[Message] = []

        async def capture(message: Message) -> None:
            captured.append(message)

        await self.app(scope, receive, capture)  # the route commits its work here
        if after:
            await send_error(send, faults.error_status,
                             "injected failure after commit (sandbox fault)",
                             headers=[(b"x-sandbox-fault-applied", b"error-after")])
            return
        start = next((m for m in captured if m["type"] == "http.response.start"), None)
        body = b"".join(m.get("body", b"") for m in captured if m["type"] == "http.response.body")
        status = start["status"] if start else 200
        headers = [(k, v) for k, v in (start or {}).get("headers", []) if k != b"content-length"]
        headers.append((b"content-length", str(len(body) + 4096).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body[: len(body) // 2],
                    "more_body": True})
        # Returning now, mid-body, makes the server close the connection.
