"""The handle the ``wallet_sandbox`` fixture gives a test (docs/testing.md): it drives an
embedded or external sandbox over HTTP only, through :mod:`walletctl.ops.sandbox_admin`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Final, TypeVar

from walletctl.errors import WalletctlError
from walletctl.ops import sandbox_admin as admin

T = TypeVar("T")


class Magic:
    """The sandbox's magic amounts (``walletctl sandbox values``), in major units."""

    APPROVED: Final = Decimal("10.00")  # any amount not ending in 01-05
    DECLINED: Final = Decimal("10.01")  # declined by the provider on approval
    CAPTURE_REFUSED: Final = Decimal("10.02")  # approved, every capture refused (422)
    PENDING: Final = Decimal("10.03")  # stays pending at the provider
    ERRORED: Final = Decimal("10.04")  # errors at the provider on approval
    REFUND_REFUSED: Final = Decimal("10.05")  # approved, every refund refused (422)


class SandboxControlError(RuntimeError):
    """A control call to the sandbox failed (the message carries status and description)."""


@dataclass
class WalletSandbox(Magic):
    """A running sandbox as a test sees it: how a merchant's code reaches it, the magic
    amounts (``wallet_sandbox.DECLINED``), and methods that drive it as its hosted page would."""

    base_url: str
    api_key: str
    merchant_id: str = admin.MERCHANT_ID
    store_id: str = admin.STORE_ID
    user_id: str = admin.USER_ID
    service_secret: str = field(default="sandbox-secret", repr=False)
    admin_token: str | None = field(default=None, repr=False)
    amount_format: str = "minor"
    external: bool = False
    magic: ClassVar[type[Magic]] = Magic
    _clock_offset: int = field(default=0, repr=False)
    _baseline_faults: dict[str, Any] | None = field(default=None, repr=False)

    def __repr__(self) -> str:  # never shows a key
        return f"WalletSandbox(base_url={self.base_url!r}, external={self.external})"

    # -- plumbing --------------------------------------------------------------------------

    @property
    def auth_headers(self) -> dict[str, str]:
        """``Authorization: PublicApiKey <api_key>``, for raw HTTP calls to ``/api/v5``."""
        return {"Authorization": f"PublicApiKey {self.api_key}"}

    def _control(self, route: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """One admin call; a failure raises :class:`SandboxControlError` naming the request."""
        try:
            return route(self.base_url, *args, token=self.admin_token, **kwargs)
        except WalletctlError as exc:
            raise SandboxControlError(admin.failure_line(exc, self.base_url)) from None

    # -- state -----------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every transaction, key and payment account; restore faults and clock."""
        self._control(admin.reset)
        if self._baseline_faults is not None:
            self._control(admin.faults, self._baseline_faults, clear=True)
        if self._clock_offset:
            self._control(admin.advance_clock, -self._clock_offset)
            self._clock_offset = 0

    def driver_token(self) -> str:
        """A one-time token for the browser-test driver (``WalletPayTesting.pay({token, ...})``
        in a runner of your own, e.g. Selenium); the sheet obeys nothing else."""
        return self._control(admin.driver_token)

    def ledger(self) -> list[dict[str, Any]]:
        """Every transaction the sandbox holds (originals and follow-ups), oldest first."""
        def read(base: str, *, token: str | None) -> list[dict[str, Any]]:
            with admin.ledger(base, token=token) as transactions:
                return list(transactions)

        return self._control(read)

    def _decide(self, ref: str, action: str) -> dict[str, Any]:
        return self._control(admin.decide, ref, action,
                             params={"merchantId": self.merchant_id, "storeId": self.store_id})

    def approve(self, ref: str) -> dict[str, Any]:
        """Approve a pending checkout, as the customer would on the hosted page."""
        return self._decide(ref, "approve")

    def decline(self, ref: str) -> dict[str, Any]:
        """Decline a pending checkout (state Declined)."""
        return self._decide(ref, "decline")

    def cancel(self, ref: str) -> dict[str, Any]:
        """Cancel a pending checkout (state Cancelled)."""
        return self._decide(ref, "cancel")

    def advance_clock(self, seconds: int) -> str:
        """Move the sandbox's clock on by whole seconds (rewound when the test ends); its new
        time."""
        data = self._control(admin.advance_clock, seconds)
        self._clock_offset += seconds
        return str(data.get("now", ""))

    def current_faults(self) -> dict[str, Any]:
        return self._control(admin.faults)

    def health(self) -> dict[str, Any]:
        """The sandbox's health route (``status``, ``version``, ``amountFormat``)."""
        return self._control(admin.health)

    @contextlib.contextmanager
    def faults(self, **settings: Any) -> Iterator[dict[str, Any]]:
        """Inject faults (the sandbox's names, ``_`` for ``-``: ``error_rate=1.0``) inside a
        ``with`` block; the previous faults come back after it."""
        previous = self.current_faults()
        wanted = {key.replace("_", "-"): value for key, value in settings.items()}
        applied = self._control(admin.faults, wanted, clear=True)
        try:
            yield applied
        finally:
            self._control(admin.faults, previous, clear=True)
