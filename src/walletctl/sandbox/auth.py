"""The sandbox's one auth model: :data:`ROUTES` is its table (docs/sandbox.md,
"Authentication")."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from walletctl.sandbox.config import SandboxContext
from walletctl.sandbox.replies import SandboxError

if TYPE_CHECKING:
    from starlette.requests import Request

# route -> the credentials it accepts ("server" = server key only; "browser" = server key, or
# a transaction key of the body's / query's merchant and store; "service" = Basic secret;
# "none" = no credential, Host/Origin-guarded: see walletctl.sandbox.middleware)
ROUTES: Final[dict[str, str]] = {
    "POST /api/v5/checkout": "server",
    "POST /api/v5/apmTransactions": "server",
    "GET /api/v5/apmTransactions": "server",
    "POST /api/v5/publicKeys": "service",
    "GET /api/v5/publicKeys/current": "browser",
    "POST /api/v5/paymentAccounts": "browser",
    "GET /api/v5/paymentAccounts/{id}": "browser",
    "POST /api/v5/transactions": "server",
    "POST /api/v5/threeDSecure": "server",
    "GET /api/v5/threeDSecure/{id}": "server",
}


@dataclass(frozen=True)
class Credential:
    """An accepted ``PublicApiKey``: the server key, or a live transaction key."""

    kind: Literal["server", "transaction"]
    key: str
    merchant_id: str | None = None
    store_id: str | None = None


def authenticate(ctx: SandboxContext, request: Request) -> Credential:
    """The credential in the ``Authorization`` header; 401 when missing, malformed, unknown
    or expired (then :func:`require_scope`; :func:`require_server` checks both)."""
    header = request.headers.get("authorization")
    if not header:
        raise SandboxError(401, "Authorization header is required: PublicApiKey <key>")
    scheme, _, key = header.strip().partition(" ")
    key = key.strip()
    if scheme.lower() != "publicapikey" or not key:
        raise SandboxError(401, "Authorization must use the PublicApiKey scheme")
    if same_text(key, ctx.config.api_key):
        return Credential("server", key)
    info = ctx.store.api_key_info(key)
    if info is None:
        raise SandboxError(401, "the API key is not valid")
    if info.expires_at is not None and ctx.now() >= info.expires_at:
        raise SandboxError(401, "the API key has expired (ask the public key service for a "
                           "new one)")
    return Credential("transaction", key, info.merchant_id, info.store_id)


def require_server(ctx: SandboxContext, request: Request, route: str) -> None:
    """:func:`authenticate`, then 403 unless it is the merchant's server key (``route`` names
    the call)."""
    if authenticate(ctx, request).kind != "server":
        raise SandboxError(
            403, f"Authorization: a per-transaction key from the public key service only "
            f"authorises the browser-wallet calls of its payment; {route} needs the "
            "merchant's server key")


def require_scope(cred: Credential, merchant_id: str, store_id: str) -> None:
    """403 when a transaction key is used for another merchant or store."""
    if cred.kind == "transaction" and (cred.merchant_id != merchant_id
                                       or cred.store_id != store_id):
        raise SandboxError(403, "the API key was not issued for this merchant and store")


def require_service_secret(ctx: SandboxContext, request: Request) -> None:
    """401 unless the ``Authorization`` header is ``Basic <userId>:<service secret>``."""
    scheme, _, value = (request.headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() != "basic" or not value:
        raise SandboxError(401, "the public key service needs Authorization: Basic "
                           "userId:secret")
    try:
        user, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise SandboxError(401, "malformed Basic credentials") from None
    if not sep or not user or not same_text(secret, ctx.config.service_secret):
        raise SandboxError(401, "service user or secret is not valid")


def same_text(given: str, expected: str) -> bool:
    """Constant-time comparison of any text (``secrets.compare_digest`` refuses non-ASCII)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"),
                                  expected.encode("utf-8", "surrogatepass"))
