"""The sandbox's documented values, plain data: its default credentials, the defaults of its
limits and the magic test amounts. The sandbox (:mod:`walletctl.sandbox.config`) serves with
them; the CLI shows them (``sandbox values``, ``sandbox serve --help``) without importing the
sandbox."""

from __future__ import annotations

from typing import Final

DEFAULT_API_KEY: Final = "sandbox-api-key"
DEFAULT_SERVICE_SECRET: Final = "sandbox-secret"  # noqa: S105 - documented sandbox default

# defaults of SandboxConfig's limits (see its fields)
DEFAULT_REQUEST_TIMEOUT: Final = 15.0
DEFAULT_WRITE_TIMEOUT: Final = 15.0
DEFAULT_BODY_BUDGET: Final = 32 * 1024 * 1024
DEFAULT_HEADER_BUDGET: Final = 16 * 1024 * 1024

# -- magic test amounts: the last two minor-unit digits of a checkout choose its outcome ------

MAGIC: Final[dict[int, str]] = {1: "decline", 2: "capture-refused", 3: "pending",
                                4: "errored", 5: "refund-refused"}
MAGIC_HELP: Final[dict[str, str]] = {
    "01": "declined by the provider on approval (state Declined, redirect to refusedUrl)",
    "02": "approved, then every capture is refused by the provider (Errored record, HTTP 422)",
    "03": "stays pending at the provider (state Pending, redirect to pendingUrl)",
    "04": "errors at the provider on approval (Errored record, null payer fields, errorUrl)",
    "05": "approved, then every refund is refused by the provider (Errored record, HTTP 422)",
}
