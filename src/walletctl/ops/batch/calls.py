"""The batch runner's gateway calls: the gate every request passes (stop, 429 pause, rate),
bounded retries, lookups (safe to repeat after any failure), what an error status means for
the run, and when connect failures mean the gateway is unreachable.

Split from runner.py, which keeps what a row goes through; :class:`GatewayCalls` holds the
run-wide state these share (the report, the breaker, the connect-failure counts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from walletctl.errors import (
    GatewayError,
    NetworkError,
    NotConnectedError,
    RedirectError,
    ResponseError,
    UnknownOutcomeError,
)
from walletctl.ops.batch.control import Gateway, _GaveUp, _Refused, _Retry, _Stopped, retrying
from walletctl.ops.batch.flow import FlowControlled
from walletctl.ops.batch.outcome import RunOptions, RunReport

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

_T = TypeVar("_T")


class GatewayCalls(FlowControlled):
    """Requests and their failures, for :class:`~walletctl.ops.batch.runner.BatchRunner`."""

    opt: RunOptions
    report: RunReport
    _connect_failures: dict[str, int]  # per row, only until the first answer

    async def _gate(self) -> None:
        if self.halted:
            raise _Stopped
        await self.pause.wait()
        await self.bucket.acquire()
        if self.halted:
            raise _Stopped
        self.report.requests += 1

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        return await retrying(attempt, max_attempts=self.opt.max_attempts,
                              backoff_initial=self.opt.backoff_initial,
                              backoff_max=self.opt.backoff_max, halted=lambda: self.halted)

    async def _lookup(self, client: Gateway, reference: str) -> list[TransactionRecord]:
        """A lookup is a read: safe to repeat after any failure."""

        async def once() -> list[TransactionRecord]:
            await self._gate()
            try:
                records = await client.lookup(reference)
            except GatewayError as exc:
                self._heard()
                self._note_status(exc.status)
                if exc.status == 404:
                    self.breaker.success()
                    return []
                raise self._classify(exc, f"lookup {reference}") from None
            except NotConnectedError as exc:
                self._connect_failed(exc, reference)
                raise _Retry(exc.message) from None
            except RedirectError as exc:  # the base_url is wrong for every request alike
                self._heard()
                self._fatal(exc)
                raise _Stopped from None
            except (UnknownOutcomeError, ResponseError, NetworkError) as exc:
                # connected, then no (readable) answer: the gateway is reachable
                self._heard()
                self.report.note("network")
                raise _Retry(exc.message) from None
            self._heard()
            self.breaker.success()
            return records

        try:
            return await self._retrying(once)
        except _Retry as exc:
            if not self.halted:
                self.breaker.failure(f"lookup {reference}: {exc.why}")
            raise _GaveUp(f"lookup {reference} kept failing: {exc.why}") from None

    def _note_status(self, status: int) -> None:
        if status == 429:
            self.report.note("throttled")
        elif status >= 500:
            self.report.note("gateway_5xx")

    def _classify(self, exc: GatewayError, what: str) -> Exception:
        """A lookup's error status: retry (429, 5xx), stop everything (auth) or give up."""
        if exc.status == 429:
            self.throttled(exc.retry_after, self.opt.backoff_initial, exc.retry_after_asked)
            return _Retry("HTTP 429", retry_after=exc.retry_after, throttled=True)
        if exc.status >= 500:
            return _Retry(exc.message)
        self.breaker.success()
        if exc.status in (401, 403):
            self._fatal(exc, f"{what}: {exc.message}")
            return _Stopped()
        return _Refused(f"{what}: {exc.message}")

    def _heard(self) -> None:
        """The gateway answered (any HTTP status): it is reachable."""
        if not self._answered:
            self._answered = True
            self._connect_failures.clear()

    def _connect_failed(self, exc: NetworkError, key: str) -> None:
        """A connect failure. When one row's connection failed ``unreachable_after`` times in a
        row (its retries back off 0.2 s, 0.4 s, ...) before the gateway ever answered this
        run, the gateway is unreachable: stop the batch now with the single command's
        message (exit 7) instead of backing off on every row."""
        self.report.note("network")
        if self._answered:
            return
        fails = self._connect_failures[key] = self._connect_failures.get(key, 0) + 1
        if fails >= self.opt.unreachable_after:
            self._fatal(exc)
            raise _Stopped from None
