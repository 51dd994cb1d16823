"""The sandbox's control routes (``/_sandbox/*``): health, values, reset, deciding a checkout,
the ledger, faults, seeding and the clock (never faulted; guarded by the middleware).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from walletctl import __version__
from walletctl.constants import SANDBOX_LEDGER_NDJSON
from walletctl.models.sandbox_values import MAGIC_HELP
from walletctl.sandbox import engine, requests
from walletctl.sandbox.config import FaultConfig, SandboxContext, is_loopback
from walletctl.sandbox.replies import SandboxError
from walletctl.sandbox.requests import CLOCK_MAX_SECONDS, ClockBody
from walletctl.sandbox.store import ORIGINAL_KINDS, Store

LEDGER_CHUNK = 16 * 1024  # bytes handed to the connection at once


def _heap_trim() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)``: give the C heap's free pages back to the system (None on
    another C library)."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


_TRIM = _heap_trim()


class _Readers:
    """The ledger's readers now. When the last one goes, the pages they held are handed back
    to the system: freed, they stay in the C heap (its arenas keep them for the next
    allocation), and 500 slow readers' pages and parts kept about 30 MB there after they
    left; ``malloc_trim`` returned all but a few MB of it, in about 20 ms (under 1 ms with
    nothing to return), in a worker thread."""

    def __init__(self) -> None:
        self.count = 0

    def enter(self) -> None:
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0 and _TRIM is not None:
            try:
                asyncio.get_running_loop().run_in_executor(None, _TRIM)
            except RuntimeError:  # no loop: the server has stopped
                _TRIM()


async def _ledger(request: Request, store: Store, readers: _Readers, *,
                  ndjson: bool) -> AsyncIterator[bytes]:
    """The ledger document (``count`` last) or its NDJSON lines. Each page is read in a worker
    thread (the workers of large bodies: a few threads, however many readers); each is sent
    in parts of :data:`LEDGER_CHUNK` bytes, every part waiting until the connection has room,
    so a reader that takes its answer slowly holds at most a page and the transport's buffer,
    all of it freed when it goes (and returned to the system when the last reader goes)."""
    pages = store.ledger_pages()
    count, data = 0, b""
    readers.enter()
    try:
        if not ndjson:
            yield b'{"transactions":['
        # a page read is short: a reader that goes waits for it, then the pages are closed
        while (page := await requests.off_loop(request, lambda: next(pages, None),
                                               abandon=False)) is not None:
            if ndjson:
                data = ("\n".join(page) + "\n").encode()
            else:
                data = (("," if count else "") + ",".join(page)).encode()
            count += len(page)
            del page
            for start in range(0, len(data), LEDGER_CHUNK):
                yield data[start:start + LEDGER_CHUNK]
        if not ndjson:
            yield f'],"count":{count}}}'.encode()
    finally:
        pages.close()  # the reader has gone: its page read ends here
        # a reader that goes is cancelled, and the cancellation's traceback keeps this frame
        # until the cyclic garbage collector's next full pass (seconds or minutes): not the
        # page it was sending
        data = b""
        readers.leave()


def install(app: FastAPI, ctx: SandboxContext) -> None:
    config, store = ctx.config, ctx.store
    fmt = config.amount_format
    # when this sandbox started: a client tells a ledger that forgot (in memory, restarted)
    # from a reference never used (walletctl lookup's hint)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    readers = _Readers()

    @app.get("/_sandbox/health", tags=["sandbox"])
    async def health() -> dict[str, Any]:
        return {"status": "ok", "amountFormat": fmt, "version": __version__,
                "startedAt": started, "persistent": config.db_path is not None}

    @app.get("/_sandbox/values", tags=["sandbox"])
    async def values() -> dict[str, Any]:
        return {
            "magicAmounts": MAGIC_HELP,
            "apiKey": "static key from --api-key (default sandbox-api-key)",
        }

    @app.post("/_sandbox/reset", tags=["sandbox"])
    async def reset() -> dict[str, Any]:
        store.reset()
        ctx.reset_rngs()
        ctx.clock_offset = timedelta(0)
        app.state.walletpay.reset()  # browser-wallet keys, accounts and 3DS results
        return {"reset": True}

    @app.post("/_sandbox/checkouts/{ref:path}/{action}", tags=["sandbox"])
    async def control_decide(ref: str, action: str, request: Request) -> Response:
        if action not in engine.ACTIONS:
            # the field and the rule, never the caller's text echoed back (400 like the
            # hosted page's form: the route exists, the value is not one of its four)
            raise SandboxError(400, "action: must be approve, decline, cancel or pending")
        scope = requests.read_query(request.scope["query_string"], ("merchantId", "storeId"))
        merchant, store_id = scope.get("merchantId"), scope.get("storeId")
        now = ctx.now()
        with store.atomic():
            rows = [
                r for r in store.find_by_reference(ref)
                if r.kind in ORIGINAL_KINDS
                and (merchant is None or r.merchant_id == merchant)
                and (store_id is None or r.store_id == store_id)
            ]
            if not rows:
                raise SandboxError(404, f"{ref}: no checkout with this reference")
            if len(rows) > 1:
                raise SandboxError(409, f"{ref}: several merchants use this reference; add "
                                   "?merchantId=...&storeId=...")
            row, which = engine.decide(store, rows[0], action, now)
        if row.state == "Expired":
            raise SandboxError(409, f"checkout {ref} has expired", description="InvalidState")
        return Response(engine.amounts_as_numbers({  # the record as a lookup answers it
            "reference": row.reference,
            "state": row.state,
            "providerStateCode": row.provider_state_code,
            "redirectUrl": engine.redirect_url(row, which),
            "record": engine.record_body(row, fmt),
        }), media_type="application/json")

    @app.get("/_sandbox/ledger", tags=["sandbox"], response_class=StreamingResponse)
    async def ledger(request: Request) -> StreamingResponse:
        # Read a page at a time in a worker thread, sent in small parts: flat memory per
        # reader, the loop stays free.
        if SANDBOX_LEDGER_NDJSON in request.headers.get("accept", ""):
            return StreamingResponse(_ledger(request, store, readers, ndjson=True),
                                     media_type=SANDBOX_LEDGER_NDJSON)
        return StreamingResponse(_ledger(request, store, readers, ndjson=False),
                                 media_type="application/json")

    @app.get("/_sandbox/faults", tags=["sandbox"])
    async def get_faults() -> dict[str, Any]:
        return ctx.faults.to_json()

    @app.post("/_sandbox/faults", tags=["sandbox"])
    async def set_faults(request: Request) -> JSONResponse:
        if not is_loopback(config.host):
            raise SandboxError(403, "fault injection is only allowed on a loopback host")
        raw = await request.body()
        data = await requests.read_object(request) if raw.strip() else {}
        try:
            ctx.faults = FaultConfig.from_pairs(data.items())
        except (ValueError, TypeError) as exc:
            raise SandboxError(400, str(exc)) from None
        ctx.reset_rngs()
        return JSONResponse(ctx.faults.to_json())

    @app.post("/_sandbox/seed", tags=["sandbox"])
    async def seed_route(request: Request) -> JSONResponse:
        raw = await request.body()

        def seed() -> dict[str, Any]:  # up to 10,000 rows: in a worker thread, not the loop
            req, amounts = engine.parse_seed(requests.parse_object(raw))
            return engine.seed_checkouts(ctx, req, amounts)

        return JSONResponse(await requests.off_loop(request, seed))

    @app.post("/_sandbox/clock", tags=["sandbox"])
    async def clock(request: Request) -> dict[str, Any]:
        if not config.allow_clock_control:
            raise SandboxError(403, "clock control is disabled (serve with --clock-control)")
        raw = await request.body()
        body = (await requests.read_model(request, ClockBody) if raw.strip()
                else requests.parse_model(ClockBody, {}, fmt))
        offset = ctx.clock_offset + timedelta(seconds=body.advance_seconds)
        if abs(offset.total_seconds()) > CLOCK_MAX_SECONDS:  # valid, but not from here: 409
            raise SandboxError(409, f"advanceSeconds: the sandbox clock moves at most "
                               f"{CLOCK_MAX_SECONDS} seconds (ten years) from real time "
                               f"either way; it is {int(ctx.clock_offset.total_seconds())} "
                               "seconds off now (POST /_sandbox/reset sets it back)")
        ctx.clock_offset = offset
        return {"now": ctx.now().isoformat()}
