"""Pass 2 of a ``capture|refund|reverse --batch``, driven: the async runner on one event
loop, a gateway client per profile the rows name, the history recorder, and SIGINT /
SIGTERM / SIGHUP (once: finish the requests in flight; twice: stop at once, the journal
resumable). What the operator sees (progress, notes) is the caller's :class:`Watch`."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.audit import BatchAudit
    from walletctl.ops.batch.journal import Journal
    from walletctl.ops.batch.outcome import RowResult, RunOptions, RunReport
    from walletctl.ops.batch.plan import Plan
    from walletctl.ops.batch.results import ResultsWriter
    from walletctl.ops.batch.runner import Gateway


class Watch(Protocol):
    """What the operator sees of a run (the CLI's progress bar and notes)."""

    def live(self) -> AbstractContextManager[object]:
        """Held while the rows are sent (a progress bar on a terminal)."""
        ...

    def on_result(self, result: RowResult) -> None: ...

    def stopping(self) -> None:
        """The first signal: the run finishes the requests in flight, then stops."""
        ...


def audit_for(profile: Profile, options: RunOptions, batch_id: str,
              profile_for: Callable[[str | None], Profile], *, approval: int | None = None,
              reason: str | None = None) -> BatchAudit | None:
    """The history recorder of a real run (None for a dry run or with the history off)."""
    from walletctl.history import history_url

    if options.predict or (not profile.history.enabled and history_url(profile) is None):
        return None
    from walletctl.history import open_for
    from walletctl.ops.batch.audit import BatchAudit

    store = open_for(profile, purpose=f"walletctl {options.op} --batch {batch_id}")
    return BatchAudit(store, profile, options.op, batch_id, profile_for=profile_for,
                      approval=approval, reason=reason)


def drive(jr: Journal, plan: Plan, options: RunOptions, *,
          profile_for: Callable[[str | None], Profile], watch: Watch,
          writer: ResultsWriter | None = None, audit: BatchAudit | None = None) -> RunReport:
    """Send the plan's rows; returns the run's report (an aborted run's counts from the
    journal). The journal is committed and the recorder closed, whatever happens."""

    def on_result(result: RowResult) -> None:
        if writer is not None:
            writer.write(result.as_dict())
        if audit is not None:
            audit.on_result(result)
        watch.on_result(result)

    try:
        with watch.live():
            report = asyncio.run(_run(jr, options, profile_for, watch, on_result, audit))
    finally:
        jr.commit()
        if audit is not None:
            audit.close()
    if report.interrupted and report.rows < plan.rows:
        _count_from_journal(report, jr)
    return report


async def _run(jr: Journal, options: RunOptions, profile_for: Callable[[str | None], Profile],
               watch: Watch, on_result: Callable[[RowResult], None],
               audit: BatchAudit | None) -> RunReport:
    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.ops.batch.runner import BatchRunner

    clients: dict[str, AsyncGatewayClient] = {}

    def gateway_for(name: str | None) -> Gateway:
        prof = profile_for(name)
        if prof.name not in clients:
            clients[prof.name] = AsyncGatewayClient(prof, max_connections=options.concurrency)
        return clients[prof.name]

    runner = BatchRunner(jr, gateway_for, options, on_result=on_result,
                         on_send=None if audit is None else audit.on_send,
                         history=None if audit is None else audit.store)
    try:
        with _Signals(runner.stop, watch.stopping):
            try:
                return await runner.run()
            except asyncio.CancelledError:
                runner.report.interrupted = True
                return runner.report
    finally:
        for client in clients.values():
            await client.aclose()


class _Signals:
    """SIGINT/SIGTERM/SIGHUP on the running loop: the first stops the run (``stop``), the
    second cancels it; after a signal, further ones are ignored until the process exits (the
    summary is still written, then exit 130)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, stop: Callable[[], None], stopping: Callable[[], None]) -> None:
        self.stop, self.stopping = stop, stopping
        self.count = 0
        self.installed: list[signal.Signals] = []
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()

    def _on_signal(self) -> None:
        self.count += 1
        if self.count == 1:
            self.stopping()
            self.stop()
        elif self.task is not None:
            self.task.cancel()

    def __enter__(self) -> None:
        for sig in self.SIGNALS:
            try:
                self.loop.add_signal_handler(sig, self._on_signal)
                self.installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    def __exit__(self, *exc: object) -> None:
        for sig in self.installed:
            self.loop.remove_signal_handler(sig)
            if self.count:
                # Already stopping on a signal: one more (Ctrl-C pressed again while the
                # clients close or the summary is written) must not cancel or kill the
                # process before it exits 130 (asyncio.run's own SIGINT handler would
                # cancel the closing clients).
                signal.signal(sig, signal.SIG_IGN)


def _count_from_journal(report: RunReport, jr: Journal) -> None:
    """An aborted run (Ctrl-C twice) never reported the rows it had not reached, nor the ones
    in flight: the journal has them all ('sent' rows may have been applied: unknown)."""
    counts = jr.counts()
    report.counts.update(confirmed=counts["confirmed"], refused=counts["refused"],
                         unknown=counts["sent"] + counts["unknown"], pending=counts["planned"])
