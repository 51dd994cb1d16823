"""Names and defaults that more than one layer needs: env vars, exit codes, API paths.

Kept free of heavy imports so that ``walletctl --help`` stays fast.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class Env:
    """Environment variables walletctl reads (defined once, documented in docs/guide.md)."""

    CONFIG: Final = "WALLETCTL_CONFIG"
    PROFILE: Final = "WALLETCTL_PROFILE"
    DEBUG: Final = "WALLETCTL_DEBUG"
    AUDIT_LOG: Final = "WALLETCTL_AUDIT_LOG"  # the history (audit log) file
    HISTORY_URL: Final = "WALLETCTL_HISTORY_URL"  # a team's shared history (PostgreSQL)
    # Sandbox
    SANDBOX_DB: Final = "WALLETCTL_SANDBOX_DB"
    SANDBOX_API_KEY: Final = "WALLETCTL_SANDBOX_API_KEY"
    SANDBOX_TOKEN: Final = "WALLETCTL_SANDBOX_TOKEN"  # noqa: S105 - a variable name
    SANDBOX_SERVICE_SECRET: Final = "WALLETCTL_SANDBOX_SERVICE_SECRET"  # noqa: S105 - a name
    # CI: a whole profile from the environment (config/env_profile.py, docs/ci.md)
    BASE_URL: Final = "WALLETCTL_BASE_URL"
    MERCHANT_ID: Final = "WALLETCTL_MERCHANT_ID"
    STORE_ID: Final = "WALLETCTL_STORE_ID"
    USER_ID: Final = "WALLETCTL_USER_ID"
    API_KEY: Final = "WALLETCTL_API_KEY"  # the key itself, as CI systems pass secrets
    AUTH_SCHEME: Final = "WALLETCTL_AUTH_SCHEME"
    SERVICE_SECRET: Final = "WALLETCTL_SERVICE_SECRET"  # noqa: S105 - a variable name
    CURRENCY: Final = "WALLETCTL_CURRENCY"
    AMOUNT_FORMAT: Final = "WALLETCTL_AMOUNT_FORMAT"
    TIMEOUT: Final = "WALLETCTL_TIMEOUT"
    ENVIRONMENT: Final = "WALLETCTL_ENVIRONMENT"
    REDIRECT_PREFIX: Final = "WALLETCTL_"  # + SUCCESS_URL, ERROR_URL, ... (REDIRECT_KEYS)
    # CI: every prompt refused (exit 2); diagnostics as JSON lines
    NO_INPUT: Final = "WALLETCTL_NO_INPUT"
    LOG_FORMAT: Final = "WALLETCTL_LOG_FORMAT"


class ExitCode(IntEnum):
    """Process exit statuses. Documented in the README's "Exit codes" table."""

    OK = 0
    ERROR = 1  # unexpected internal error (a bug): run again with --debug
    USAGE = 2  # bad flags or arguments
    CONFIG = 3  # profile file missing/invalid/insecure, secret not found
    VALIDATION = 4  # the request would be invalid; nothing was sent
    DECLINED = 5  # the gateway (or walletctl's pre-flight check) refused the operation
    GATEWAY = 6  # the gateway answered 5xx; nothing is known to have happened
    NETWORK = 7  # could not connect; nothing was sent
    UNKNOWN_OUTCOME = 8  # the request may or may not have been applied: check with lookup
    AUTH = 9  # credentials refused (401/403)
    SMOKE_FAILED = 10  # a smoke scenario failed
    HELD = 11  # held back, nothing sent: a likely duplicate, or the original is busy elsewhere
    AWAITING_APPROVAL = 12  # above the profile's approval amount: filed for a second person
    MISMATCH = 13  # `walletctl recon`: the history and the gateway disagree
    CLOSED_PIPE = 141  # stdout was closed by the reader (`| head`): ended quietly, as on SIGPIPE
    INTERRUPTED = 130  # Ctrl-C / SIGTERM


# Default gateway paths (docs/gateway-api.md); each can be overridden per profile ([paths]).
PATH_KEYS: Final = {
    "checkout": "/api/v5/checkout",
    "apm_transactions": "/api/v5/apmTransactions",
    "public_keys": "/api/v5/publicKeys",
    "payment_accounts": "/api/v5/paymentAccounts",
    "transactions": "/api/v5/transactions",
}

# Header carrying the sandbox's admin token to its /_sandbox/* control routes.
SANDBOX_TOKEN_HEADER: Final = "X-Sandbox-Token"  # noqa: S105 - a header name
# ``GET /_sandbox/ledger`` with this in ``Accept``: one transaction a line, as it is read
SANDBOX_LEDGER_NDJSON: Final = "application/x-ndjson"

APM_PROVIDER: Final = "WalletV2"
WALLETPAY_METHOD: Final = "WalletPay"
DEFAULT_TIMEOUT: Final = 30.0
MAX_TIMEOUT: Final = 3600.0  # seconds; a profile or --timeout above it is refused
# minutes: a capture/refund/reversal identical to one this recent is held (a profile setting)
DUPLICATE_WINDOW: Final = 10
