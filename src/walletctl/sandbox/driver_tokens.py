"""One-time tokens for the browser-test driver: only a test run drives the payment sheet.

The test process asks the sandbox's admin API for a token (``POST /_sandbox/testing/token``,
an admin route: no page can call it cross-site, and it needs the admin token when the sandbox
has one) and hands it to the driver with its command. The sheet obeys a command only after
it redeemed that token here (``POST /wallet/testing/redeem``, once per token); a page script
never sees one, so it cannot drive the sheet with or without the driver on the page.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

TOKEN_PREFIX = "wpt_"  # noqa: S105 - a prefix, not a secret
TOKEN_TTL_SECONDS = 600
MAX_LIVE_TOKENS = 1000  # the oldest unredeemed token goes first beyond this


class DriverTokens:
    """Live one-time tokens (in memory; a restart forgets them)."""

    def __init__(self, ttl: float = TOKEN_TTL_SECONDS, limit: int = MAX_LIVE_TOKENS) -> None:
        self.ttl = ttl
        self.limit = limit
        self._live: OrderedDict[str, float] = OrderedDict()  # token -> monotonic deadline
        self._lock = threading.Lock()

    def issue(self) -> str:
        token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        with self._lock:
            self._live[token] = time.monotonic() + self.ttl
            while len(self._live) > self.limit:
                self._live.popitem(last=False)
        return token

    def redeem(self, token: str) -> bool:
        """True once for a live token; False for any other value (used, expired, unknown)."""
        with self._lock:
            deadline = self._live.pop(token, None)
        return deadline is not None and time.monotonic() < deadline

    def clear(self) -> None:
        with self._lock:
            self._live.clear()
