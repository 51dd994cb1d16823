"""The runner's control flow pieces: what it needs of a gateway, the exceptions that steer a
row through its retry loop, and the retry loop itself (backoff between attempts)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from walletctl.ops.batch.flow import BACKOFF_JITTER

if TYPE_CHECKING:
    from walletctl.client.gateway import FollowUpCall
    from walletctl.config.profile import Profile
    from walletctl.models.followup import FollowUpResponse
    from walletctl.models.records import TransactionRecord

_T = TypeVar("_T")
MAX_THROTTLED = 50  # 429s tolerated per row on top of max_attempts



class Gateway(Protocol):
    """What the runner needs of :class:`walletctl.client.gateway.AsyncGatewayClient`."""

    profile: Profile

    async def followup_call(self, call: FollowUpCall) -> FollowUpResponse: ...

    async def lookup(self, reference: str) -> list[TransactionRecord]: ...


class _Retry(Exception):
    """This attempt failed in a way that proves nothing was applied: try again."""

    def __init__(self, why: str, *, retry_after: float | None = None, throttled: bool = False):
        super().__init__(why)
        self.why = why
        self.retry_after = retry_after
        self.throttled = throttled


class _Stopped(Exception):
    """No new attempt may start (Ctrl-C, circuit breaker open, fatal error)."""


class _Done(Exception):
    """The row reached a final state inside a retry loop."""


class _Refused(Exception):
    """The gateway refused a lookup for this row (e.g. HTTP 400): the row is refused."""


class _GaveUp(Exception):
    """A lookup kept failing: this row's outcome stays as journaled (unknown or not sent)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


async def retrying(
    attempt: Callable[[], Awaitable[_T]],
    *,
    max_attempts: int,
    backoff_initial: float,
    backoff_max: float,
    halted: Callable[[], bool],
) -> _T:
    """Run ``attempt`` until it returns or raises anything but :class:`_Retry`.

    Between attempts: jittered exponential backoff (``backoff_initial`` doubling up to
    ``backoff_max``, plus up to ``BACKOFF_JITTER`` s), or no wait after a 429 with
    Retry-After (the shared pause holds it). Gives up (re-raising the last _Retry) after
    ``max_attempts`` failed attempts, ``MAX_THROTTLED`` 429s, or when the run halts.
    A plain loop rather than tenacity: this runs once or twice per row, and tenacity's
    per-call setup cost more CPU than the rest of the row's bookkeeping.
    """
    tries = throttled = 0
    while True:
        try:
            return await attempt()
        except _Retry as exc:
            if exc.throttled:
                throttled += 1
            else:
                tries += 1
            if tries >= max_attempts or throttled >= MAX_THROTTLED or halted():
                raise
            if exc.throttled and exc.retry_after is not None:
                delay = 0.0
            else:
                n = tries + throttled  # every attempt so far
                delay = min(backoff_initial * 2.0 ** min(n - 1, 60)
                            + random.uniform(0, BACKOFF_JITTER), backoff_max)
            await asyncio.sleep(delay)
