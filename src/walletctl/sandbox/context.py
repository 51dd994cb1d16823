"""The app context handed to route modules and to ``walletpay.install(app, ctx)``.

``ctx.config``  the :class:`SandboxConfig`;
``ctx.store``   the :class:`~walletctl.sandbox.store.Store` (the ledger; see its docstring);
``ctx.now()``   (also ``ctx.clock()``) the current time from the injected clock (+ any
                ``/_sandbox/clock`` offset), an aware UTC datetime: use it for every
                timestamp and expiry decision;
``ctx.amount_format``  ``"minor"`` or ``"decimal"``: how amounts go on the wire;
``ctx.check_api_key(header_value, merchant_id, store_id)`` -> ``None`` or an error tuple
                ``(status, code, message)``: the ``PublicApiKey`` rule used by every route.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from walletctl.sandbox.config import FaultConfig, SandboxConfig
from walletctl.sandbox.store import Store


@dataclass
class SandboxContext:
    config: SandboxConfig
    store: Store
    clock_offset: timedelta = timedelta(0)
    faults: FaultConfig = field(default_factory=FaultConfig)
    _rngs: dict[int | None, random.Random] = field(default_factory=dict, repr=False)
    _rng_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def amount_format(self) -> str:
        return self.config.amount_format

    def now(self) -> datetime:
        return self.config.clock() + self.clock_offset

    @property
    def clock(self) -> Callable[[], datetime]:
        """The sandbox clock as a callable (same as :meth:`now`)."""
        return self.now

    def rng(self, seed: int | None) -> random.Random:
        """One RNG per seed, kept across requests so a seeded run is reproducible."""
        with self._rng_lock:
            found = self._rngs.get(seed)
            if found is None:
                found = self._rngs[seed] = random.Random(seed)
            return found

    def reset_rngs(self) -> None:
        with self._rng_lock:
            self._rngs.clear()

    def check_api_key(
        self, header: str | None, merchant_id: str | None, store_id: str | None
    ) -> tuple[int, str, str] | None:
        """``None`` when ``header`` carries an accepted ``PublicApiKey``; else the error."""
        if not header:
            return (401, "Unauthorized", "Authorization header is required: PublicApiKey <key>")
        scheme, _, key = header.strip().partition(" ")
        key = key.strip()
        if scheme.lower() != "publicapikey" or not key:
            return (401, "Unauthorized", "Authorization must use the PublicApiKey scheme")
        if key == self.config.api_key:
            return None
        info = self.store.api_key_info(key)
        if info is None:
            return (401, "Unauthorized", "the API key is not valid")
        if merchant_id is None or store_id is None:
            return None  # the route checks again once it knows the merchant
        if info.merchant_id != merchant_id or info.store_id != store_id:
            return (403, "Forbidden", "the API key was not issued for this merchant and store")
        if not self.store.is_valid_api_key(key, merchant_id, store_id, self.now()):
            return (401, "Unauthorized", "the API key has expired")
        return None
