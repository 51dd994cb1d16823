"""The sandbox gateway: a FastAPI app implementing endpoints 1-3 of the spec.

Routes (all answers are JSON unless stated; errors are ``{code, description,
details: {message}}`` on every route; each body is read once and strictly, and limited while
reading: :mod:`walletctl.sandbox.requests`, :mod:`walletctl.sandbox.middleware`):

Gateway (``Authorization: PublicApiKey <server key>``, default ``sandbox-api-key``, any
merchant; a per-transaction key from the public key service is refused here with 403: see
:mod:`walletctl.sandbox.auth`):

* ``POST /api/v5/checkout`` — spec 2.1 -> ``{redirectUrl}`` (2.2); creates a ``Pending``
  transaction. 400 validation, 401/403 auth, 409 reused ``clientSystemTransactionId`` with
  another body (the identical checkout again: the stored answer is replayed).
* ``POST /api/v5/apmTransactions`` — spec 2.3 -> 2.4; capture / refund / reversal.
  404 unknown ``clientSystemInvoiceId``, 409 reused reference with a different body
  (identical body: the stored answer is replayed), 422 business rule.
* ``GET /api/v5/apmTransactions?merchantId&storeId&clientSystemTransactionId`` — array of
  2.5 records (the reference and its follow-ups); 404 when the reference is unknown.

Hosted page: ``GET /pay/{token}`` (HTML) and ``POST /pay/{token}`` (form ``action`` =
approve | decline | cancel | pending) -> 303 to the checkout's success / refused / cancel /
pending / error URL. Single use; expires after ``redirectUrlTimeout`` seconds.

Sandbox control (never faulted; Host/Origin-guarded and, when the sandbox has an admin token,
``X-Sandbox-Token`` required): ``POST /_sandbox/reset``,
``POST /_sandbox/checkouts/{ref}/{approve|decline|cancel}``, ``GET /_sandbox/ledger``,
``GET|POST /_sandbox/faults``, ``POST /_sandbox/seed`` (many approved checkouts at once),
``POST /_sandbox/clock`` (when enabled; bounded), ``GET /_sandbox/health``,
``GET /_sandbox/values``. ``/docs``: Swagger UI without a CDN.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from walletctl import __version__
from walletctl.models.checkout import CheckoutResponse
from walletctl.models.fields import check_reference
from walletctl.sandbox import auth, control, engine, pages, requests, walletpay
from walletctl.sandbox.config import SandboxConfig, SandboxContext
from walletctl.sandbox.middleware import (
    BodyLimitMiddleware,
    CorsMiddleware,
    FaultMiddleware,
    GuardMiddleware,
    HeadMiddleware,
)
from walletctl.sandbox.openapi import install_docs_page, openapi_document
from walletctl.sandbox.replies import SandboxError, error_body
from walletctl.sandbox.requests import CheckoutBody, FollowUpBody
from walletctl.sandbox.store import Store, TxRow

_LOOKUP_PARAMS = ("merchantId", "storeId", "clientSystemTransactionId")
_REPLAYED = {"X-Sandbox-Replayed": "true"}  # the stored answer to the identical request


def create_app(config: SandboxConfig) -> FastAPI:
    """Build the sandbox app (own store) for ``config``."""
    store = Store(config.db_path)
    ctx = SandboxContext(config=config, store=store, faults=config.faults)
    fmt = config.amount_format
    app = FastAPI(
        title="walletctl sandbox gateway",
        version=__version__,
        description=__doc__,
        docs_url=None,  # openapi.install_docs_page serves /docs without a CDN
        redoc_url=None,
    )
    app.state.ctx = ctx

    # -- error handling: every answer is a gateway error object -----------------------------

    @app.exception_handler(SandboxError)
    async def _sandbox_error(request: Request, exc: SandboxError) -> JSONResponse:
        return JSONResponse(exc.body, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail) if exc.detail else "error"
        description = None
        headers = getattr(exc, "headers", None)
        if exc.status_code == 404:
            message, description = f"{request.url.path}: no such route", "NotFound"
        elif exc.status_code == 405:  # Starlette names the first route's methods only
            headers = {**(headers or {}), "Allow": allowed_methods(app, request.url.path)}
        return JSONResponse(
            error_body(exc.status_code, message, description=description,
                       code="GEN-404" if description else None),
            status_code=exc.status_code,
            headers=headers,
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body(500, "internal sandbox error"), status_code=500)

    # -- endpoint 1: checkout --------------------------------------------------------------

    @app.post("/api/v5/checkout", tags=["gateway"],
              summary="Create a redirect-wallet checkout (spec 2.1 -> 2.2)")
    async def checkout(request: Request) -> JSONResponse:
        auth.require_server(ctx, request, "POST /api/v5/checkout")
        req = await requests.read_model(request, CheckoutBody)
        row, replayed = engine.create_checkout(store, req, ctx.now())
        url = f"{ctx.base_url(request)}/pay/{row.token}"
        body = CheckoutResponse(redirect_url=url).to_wire(fmt)
        return JSONResponse(body, headers=_REPLAYED if replayed else None)

    # -- endpoint 2: follow-ups ------------------------------------------------------------

    @app.post("/api/v5/apmTransactions", tags=["gateway"],
              summary="Capture, refund or reverse (spec 2.3 -> 2.4)")
    async def followup(request: Request) -> JSONResponse:
        auth.require_server(ctx, request, "POST /api/v5/apmTransactions")
        req = await requests.read_model(request, FollowUpBody)
        status, body, replayed = engine.apply_followup(store, req, ctx.now(), fmt)
        return JSONResponse(body, status_code=status, headers=_REPLAYED if replayed else None)

    # -- endpoint 3: lookup ----------------------------------------------------------------

    @app.get("/api/v5/apmTransactions", tags=["gateway"],
             summary="Transaction details of a reference and its follow-ups (spec 2.5)")
    async def lookup(request: Request) -> Response:
        auth.require_server(ctx, request, "GET /api/v5/apmTransactions")
        values = requests.read_query(request.scope["query_string"], _LOOKUP_PARAMS, _LOOKUP_PARAMS)
        try:  # the rule the checkout applied: a reference it refuses cannot exist
            check_reference(values["clientSystemTransactionId"])
        except ValueError as exc:
            raise SandboxError(400, f"clientSystemTransactionId: {exc}") from None
        now = ctx.now()
        with store.atomic():
            rows = store.lookup(values["merchantId"], values["storeId"],
                                values["clientSystemTransactionId"])
            rows = [engine.expire_if_due(store, r, now) for r in rows]
        if not rows:
            raise engine.not_found("clientSystemTransactionId", values["merchantId"],
                                   values["storeId"], values["clientSystemTransactionId"])
        return Response(engine.amounts_as_numbers([engine.record_body(r, fmt) for r in rows]),
                        media_type="application/json")

    # -- hosted approval page ----------------------------------------------------------------

    def decidable(row: TxRow | None, now: datetime) -> TxRow | Response:
        """The link's checkout (expired if due) while it awaits a decision, else the page or
        redirect answered instead."""
        if row is None:
            return pages.message_page("Unknown link", "This payment link does not exist.", 404)
        row = engine.expire_if_due(store, row, now)
        if row.state == "Expired":
            return RedirectResponse(engine.redirect_url(row, "errorUrl"), status_code=303)
        if row.token_used or row.state != "Pending":
            return pages.message_page("Link already used", "This payment link works once and "
                                      "has been used.", 410)
        return row

    @app.get("/pay/{token}", response_class=HTMLResponse, tags=["hosted page"],
             summary="The hosted approval page (HTML)")
    async def pay_page(token: str) -> Response:
        now = ctx.now()
        with store.atomic():
            found = decidable(store.find_by_token(token), now)
        if isinstance(found, Response):
            return found
        return HTMLResponse(pages.approval_page(found, token, now))

    @app.post("/pay/{token}", tags=["hosted page"],
              summary="The customer's decision (form field action) -> 303 to the shop")
    async def pay_decide(token: str, request: Request) -> Response:
        actions = await requests.form_values(request, "action")
        if len(actions) > 1:  # one decision: never the first (or last) of two applied
            return pages.message_page("Bad request", "action: is given more than once (one "
                                      "decision per form)", 400)
        action = actions[0]
        now = ctx.now()
        if action not in engine.ACTIONS:
            return pages.message_page("Bad request", "action: must be approve, decline, "
                                      "cancel or pending", 400)
        with store.atomic():
            found = decidable(store.find_by_token(token), now)
            if isinstance(found, Response):
                return found
            row, which = engine.decide(store, found, action, now)
        return RedirectResponse(engine.redirect_url(row, which), status_code=303)

    control.install(app, ctx)  # the /_sandbox/* routes, after the hosted page

    walletpay.install(app, ctx)
    install_docs_page(app)
    app.add_middleware(FaultMiddleware, ctx=ctx)
    app.add_middleware(BodyLimitMiddleware, body_budget=config.body_budget)
    app.add_middleware(CorsMiddleware, allowed_origins=config.allowed_origins)
    app.add_middleware(GuardMiddleware, config=config)  # Host checked on every request
    app.add_middleware(HeadMiddleware)  # outermost: HEAD is routed as GET

    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    return app


def allowed_methods(app: FastAPI, path: str) -> str:
    """Every method some route of ``app`` answers at ``path`` (HEAD wherever GET is:
    :mod:`walletctl.sandbox.middleware`), for the ``Allow`` header of a 405."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, Route) and route.methods and route.path_regex.match(path):
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def store_of(app: FastAPI) -> Store:
    """The ledger of an app built by :func:`create_app` (for tests and tools)."""
    ctx: SandboxContext = app.state.ctx
    return ctx.store
