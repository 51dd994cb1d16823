"""Flow control of both batch engines (``capture|refund|reverse --batch``, ``lookup --batch``,
``recon``): token bucket, Retry-After pause, circuit breaker, retries with backoff, the lookup,
signals, the flow options and how a run that stopped early exits. Clocks are injectable so
the unit tests need no sleeping.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from walletctl.client.gateway import MAX_RETRY_AFTER
from walletctl.constants import ExitCode
from walletctl.errors import (
    GatewayError,
    NetworkError,
    NotConnectedError,
    RedirectError,
    ResponseError,
    UnknownOutcomeError,
    UsageError,
    WalletctlError,
)

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

_T = TypeVar("_T")
THROTTLE_BUDGET: Final = 300.0  # seconds of 429 pauses in one run, in all: then it stops
BACKOFF_INITIAL: Final = 0.2
BACKOFF_MAX: Final = 5.0
BACKOFF_JITTER: Final = 0.2
MAX_ATTEMPTS: Final = 8  # per row, for sends and for lookups
MAX_CONCURRENCY: Final = 512
MAX_THROTTLED: Final = 50  # 429s tolerated per row on top of max_attempts


def check_flow_options(concurrency: int, rate: float | None, max_failures: int) -> None:
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise UsageError(f"--concurrency: must be between 1 and {MAX_CONCURRENCY}")
    if rate is not None and not rate > 0:
        raise UsageError("--rate: must be greater than 0 (requests per second)")
    if max_failures < 1:
        raise UsageError("--max-failures: must be at least 1")


@contextmanager
def stopped_by_signals(stop: Callable[[], object], again: Callable[[], object] | None = None,
                       ) -> Iterator[None]:
    """Within the running event loop: SIGINT, SIGTERM (and, with ``again``, SIGHUP) call
    ``stop`` (finish what is in flight, start nothing new) instead of killing the process;
    restored on leaving. With ``again``, a second signal calls it (stop at once), and once a
    signal came any further one is ignored until the process exits: pressed again while the
    clients close or the summary is written, it must not cut the exit short (130)."""
    loop = asyncio.get_running_loop()
    kinds = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if again else ())
    count = 0

    def on_signal() -> None:
        nonlocal count
        count += 1
        if again is None or count == 1:
            stop()
        elif count == 2:  # once: a third cancel would cut the clients' closing short
            again()

    installed = []
    for sig in kinds:
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
            if count and again is not None:
                signal.signal(sig, signal.SIG_IGN)


def stop_code(report: StopReport) -> int | None:
    """The exit code of a run that stopped early (Ctrl-C, a fatal answer, the circuit
    breaker), or None when it ran to the end."""
    if report.interrupted:
        return int(ExitCode.INTERRUPTED)
    if report.fatal_code is not None:
        return report.fatal_code
    if report.breaker_open:
        return int(ExitCode.GATEWAY)
    return None


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up. ``rate=None``: unlimited."""

    def __init__(self, rate: float | None, burst: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be > 0")
        self.rate = rate
        self.burst = burst if burst is not None else (max(1.0, rate) if rate else 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._last = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        if self.rate is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def try_take(self) -> float:
        """Take a token if one is there (returns 0.0), else return the seconds to wait."""
        if self.rate is None:
            return 0.0
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate

    async def acquire(self) -> None:
        if self.rate is None:
            return
        async with self._lock:  # FIFO: waiters are served in order
            while (wait := self.try_take()) > 0:
                await self._sleep(wait)


class CircuitBreaker:
    """Opens, for the rest of the run, after ``threshold`` consecutive failures; a definitive
    answer (2xx, 4xx) resets the count. A failure is an OPERATION (a row's lookup or send)
    that failed after all its retries, not one 5xx: under a 20-30% fault rate cheap error
    answers bunch together, and counting requests trips on a gateway that is working."""

    def __init__(self, threshold: int) -> None:
        if threshold < 1:
            raise ValueError("threshold must be >= 1")
        self.threshold = threshold
        self.consecutive = 0
        self.open = False
        self.last_failure: str | None = None

    def success(self) -> None:
        if not self.open:
            self.consecutive = 0

    def failure(self, what: str) -> None:
        self.consecutive += 1
        self.last_failure = what
        if self.consecutive >= self.threshold:
            self.open = True


class Pause:
    """A shared "send nothing before" instant, set by 429 answers (all workers honour it)."""

    def __init__(self) -> None:
        self.until = 0.0
        self.total = 0.0  # seconds of pause added by every 429 of the run (overlaps once)

    def extend(self, seconds: float) -> None:
        now = time.monotonic()
        start = max(self.until, now)
        self.total += max(0.0, now + seconds - start)
        self.until = max(self.until, now + seconds)

    async def wait(self) -> None:
        while (left := self.until - time.monotonic()) > 0:  # in steps: a stop ends the pause
            await asyncio.sleep(min(left, 0.5))


@dataclass
class StopReport:
    """What both engines' reports hold: requests, time, and whether and why a run stopped
    early."""

    requests: int = 0
    elapsed: float = 0.0
    interrupted: bool = False
    breaker_open: bool = False
    fatal: str | None = None  # e.g. credentials refused: every row would fail the same way
    fatal_code: int | None = None  # the ExitCode for ``fatal``
    fatal_hint: str | None = None  # the single command's hint for the same error


@dataclass(frozen=True)
class FlowOptions:
    """The flow options of both engines (follow-ups, balance lookups)."""

    concurrency: int = 8
    rate: float | None = None
    max_failures: int = 10
    max_attempts: int = MAX_ATTEMPTS
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    # connect failures before any answer that make the gateway unreachable (stop the run)
    unreachable_after: int = 3


class Lookup(Protocol):
    """What a lookup needs of :class:`walletctl.client.gateway.AsyncGatewayClient`."""

    async def lookup(self, reference: str) -> list[TransactionRecord]: ...


class Retry(Exception):
    """This attempt failed in a way that proves nothing was applied: try again.
    ``exhausted``: set when :meth:`FlowControlled.retrying` gave up after max_attempts."""

    def __init__(self, why: str, *, retry_after: float | None = None, throttled: bool = False):
        super().__init__(why)
        self.why = why
        self.retry_after = retry_after
        self.throttled = throttled
        self.exhausted = False


@dataclass
class Tries:
    """One request's failed attempts so far (:meth:`FlowControlled.again` counts them)."""

    failed: int = 0
    throttled: int = 0  # answered 429


class Stopped(Exception):
    """No new attempt may start (Ctrl-C, circuit breaker open, fatal error)."""


class LookupRefused(Exception):
    """A lookup answered by a redirect or a 4xx other than 404: ``error``."""

    def __init__(self, error: GatewayError | RedirectError) -> None:
        super().__init__(error.message)
        self.error = error


class FlowControlled:
    """What both batch engines (follow-ups, balance lookups) share: the rate limit, the
    circuit breaker, the 429 pause, a graceful stop, retries and the lookup."""

    report: StopReport
    opt: FlowOptions
    jitter: float = BACKOFF_JITTER  # seconds of random wait added to each backoff

    def __init__(self, options: FlowOptions) -> None:
        self.opt = options
        self.bucket = TokenBucket(options.rate)
        self.breaker = CircuitBreaker(options.max_failures)
        self.pause = Pause()
        self._answered = False  # any HTTP answer this run (connect failures before: fatal)
        self._connect_failures: dict[str, int] = {}  # per row, only until the first answer
        self._stopping = False

    def stop(self) -> None:
        """Graceful stop: start nothing new; requests in flight finish and are reported."""
        self._stopping = True
        self.report.interrupted = True

    @property
    def halted(self) -> bool:
        return self._stopping or self.breaker.open or self.report.fatal is not None

    # How a row the run did not get to is described (the engines' own words).
    NOT_DONE = "not started"
    FAILURES = "consecutive gateway failures"

    def _note(self, event: str) -> None:
        """An event on the way (the runner's report counts them)."""

    def _fatal(self, exc: WalletctlError, message: str | None = None) -> None:
        """Stop the run with ``exc``'s exit code and hint (the first such error wins)."""
        if self.report.fatal is None:
            self.report.fatal = exc.message if message is None else message
            self.report.fatal_code = int(exc.exit_code)
            self.report.fatal_hint = exc.hint

    def throttled(self, retry_after: float | None, fallback: float,
                  asked: float | None = None) -> None:
        """A 429: every worker pauses ``Retry-After`` (capped at :data:`MAX_RETRY_AFTER`, or
        ``fallback``). Once the run has paused :data:`THROTTLE_BUDGET` seconds in all, it
        stops (exit 6, the rows left resumable): a gateway that keeps throttling must not hold
        a batch for hours, 60 s at a time."""
        later = GatewayError(429, hint="run the same command again later: the rows left are "
                                       "resumable, nothing is sent twice")
        if asked is not None and asked > MAX_RETRY_AFTER:  # not a wait a run can honour
            self._fatal(later, f"the gateway answered HTTP 429 with Retry-After {asked:.0f} s, "
                               f"more than the {MAX_RETRY_AFTER:.0f} s a run waits")
        else:
            self.pause.extend(retry_after if retry_after is not None else fallback)
            if self.pause.total > THROTTLE_BUDGET:
                self._fatal(later, f"the gateway kept answering HTTP 429 (Too Many Requests): "
                                   f"{self.pause.total:.0f} s of Retry-After pauses in this "
                                   f"run, more than the {THROTTLE_BUDGET:.0f} s a run waits")
        if self.report.fatal is not None:
            self.pause.until = 0.0  # stopping: no worker keeps sleeping on the pause

    def _halt_reason(self) -> str:
        if self.report.fatal:
            return f"{self.NOT_DONE}: {self.report.fatal}"
        if self.breaker.open:
            return (f"{self.NOT_DONE}: circuit breaker open after {self.breaker.threshold} "
                    f"{self.FAILURES} ({self.breaker.last_failure})")
        return f"{self.NOT_DONE}: interrupted"

    async def _gate(self) -> None:
        if self.halted:
            raise Stopped
        await self.pause.wait()
        await self.bucket.acquire()
        if self.halted:
            raise Stopped
        self.report.requests += 1

    async def retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``attempt`` until it returns or raises anything but :class:`Retry`, backing off
        between attempts (:meth:`again`). (Not tenacity: its per-call setup cost more CPU
        than a row's bookkeeping.)"""
        tries = Tries()
        while True:
            try:
                return await attempt()
            except Retry as exc:
                await self.again(exc, tries)

    async def again(self, exc: Retry, tries: Tries) -> None:
        """After ``exc``, the ``tries``-th failed attempt: wait before the next (after a 429
        with Retry-After the shared pause waits instead), or raise ``exc`` again after
        ``max_attempts``, :data:`MAX_THROTTLED` 429s, or a halt."""
        if exc.throttled:
            tries.throttled += 1
        else:
            tries.failed += 1
        exc.exhausted = tries.failed >= self.opt.max_attempts
        if exc.exhausted or tries.throttled >= MAX_THROTTLED or self.halted:
            raise exc
        if exc.throttled and exc.retry_after is not None:
            delay = 0.0
        else:
            n = tries.failed + tries.throttled  # every attempt so far
            delay = min(self.opt.backoff_initial * 2.0 ** min(n - 1, 60)
                        + random.uniform(0, self.jitter), self.opt.backoff_max)
        await asyncio.sleep(delay)

    async def lookup(self, client: Lookup, reference: str) -> list[TransactionRecord]:
        """``reference``'s records (a read: safe to repeat after any failure; 404: none).
        Raises :class:`Stopped`, :class:`LookupRefused`, or the last :class:`Retry`."""

        async def once() -> list[TransactionRecord]:
            await self._gate()
            try:
                records = await client.lookup(reference)
            except GatewayError as exc:
                self._heard()
                self._note_status(exc.status)
                if exc.status == 429:
                    self.throttled(exc.retry_after, self.opt.backoff_initial,
                                   exc.retry_after_asked)
                    raise Retry("HTTP 429", retry_after=exc.retry_after, throttled=True) from None
                if exc.status >= 500:
                    raise Retry(exc.message) from None
                self.breaker.success()
                if exc.status == 404:
                    return []
                raise LookupRefused(exc) from None
            except NotConnectedError as exc:
                self._connect_failed(exc, reference)
                raise Retry(exc.message) from None
            except RedirectError as exc:  # the base_url is wrong for every request alike
                self._heard()
                raise LookupRefused(exc) from None
            except (UnknownOutcomeError, ResponseError, NetworkError) as exc:
                # connected, then no (readable) answer: the gateway is reachable
                self._heard()
                self._note("network")
                raise Retry(exc.message) from None
            self._heard()
            self.breaker.success()
            return records

        return await self.retrying(once)

    def _note_status(self, status: int) -> None:
        if status == 429:
            self._note("throttled")
        elif status >= 500:
            self._note("gateway_5xx")

    def _heard(self) -> None:
        """The gateway answered (any HTTP status): it is reachable."""
        if not self._answered:
            self._answered = True
            self._connect_failures.clear()

    def _connect_failed(self, exc: NetworkError, key: str) -> None:
        """A connect failure. When one row's connection failed ``unreachable_after`` times in a
        row before the gateway ever answered this run, the gateway is unreachable: stop the
        run now with the single command's message (exit 7) instead of backing off on every
        row."""
        self._note("network")
        if self._answered:
            return
        fails = self._connect_failures[key] = self._connect_failures.get(key, 0) + 1
        if fails >= self.opt.unreachable_after:
            self._fatal(exc)
            raise Stopped from None
