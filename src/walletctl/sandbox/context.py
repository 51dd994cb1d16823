"""The app context handed to route modules and to ``walletpay.install(app, ctx)``.

``ctx.config``  the :class:`SandboxConfig`;
``ctx.store``   the :class:`~walletctl.sandbox.store.Store` (the ledger; see its docstring);
``ctx.now()``   the current time from the injected clock (+ any
                ``/_sandbox/clock`` offset), an aware UTC datetime: use it for every
                timestamp and expiry decision;
Credentials (which key may call which route): :mod:`walletctl.sandbox.auth`.
"""

from __future__ import annotations

import random
import threading
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

    def now(self) -> datetime:
        return self.config.clock() + self.clock_offset

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
