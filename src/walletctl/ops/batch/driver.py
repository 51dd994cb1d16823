"""Pass 2 of a batch, driven: the runner on one event loop, a gateway client per profile the
rows name, SIGINT / SIGTERM / SIGHUP (once: finish the requests in flight; twice: stop at
once, the journal resumable), the history's recorder opened (:func:`audit_for`) and the
``--results`` file (:class:`ResultsWriter`). What the operator sees is the caller's
:class:`Watch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from walletctl.history import history_url, open_for
from walletctl.ops.batch.flow import stopped_by_signals

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import Journal, Plan
    from walletctl.ops.batch.runner import (
        BatchAudit,
        Gateway,
        RowResult,
        RunOptions,
        RunReport,
    )


class Watch(Protocol):
    """What the operator sees of a run (the CLI's progress bar and notes)."""

    def live(self) -> AbstractContextManager[object]:
        """Held while the rows are sent (a progress bar on a terminal)."""

    def on_result(self, result: RowResult) -> None: ...

    def stopping(self) -> None:
        """The first signal: the run finishes the requests in flight, then stops."""


def audit_for(profile: Profile, options: RunOptions, batch_id: str,
              profile_for: Callable[[str | None], Profile], *, approval: int | None = None,
              reason: str | None = None) -> BatchAudit | None:
    """The history recorder of a real run (None for a dry run or with the history off)."""
    from walletctl.ops.batch.runner import BatchAudit

    if options.predict or (not profile.history.enabled and history_url(profile) is None):
        return None
    store = open_for(profile, purpose=f"walletctl {options.op} --batch {batch_id}")
    return BatchAudit(store, options.op, batch_id, profile_for, approval=approval,
                      reason=reason)


def drive(jr: Journal, plan: Plan, options: RunOptions, *,
          profile_for: Callable[[str | None], Profile], watch: Watch,
          writer: ResultsWriter | None = None, audit: BatchAudit | None = None) -> RunReport:
    """Send the plan's rows; returns the run's report (an aborted run's counts from the
    journal). The journal is committed and the recorder closed, whatever happens."""

    def on_result(result: RowResult) -> None:
        if writer is not None:
            writer.write(result.as_dict())
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

    runner = BatchRunner(jr, gateway_for, options, on_result=on_result, audit=audit)
    try:
        task = asyncio.current_task()

        def first() -> None:
            watch.stopping()
            runner.stop()

        with stopped_by_signals(first, again=None if task is None else task.cancel):
            try:
                return await runner.run()
            except asyncio.CancelledError:
                runner.report.interrupted = True
                return runner.report
    finally:
        # a cancel that came as the run ended (Ctrl-C again) must not cut the exit short,
        # nor leave the other clients open
        for client in clients.values():
            with contextlib.suppress(asyncio.CancelledError):
                await client.aclose()


def _count_from_journal(report: RunReport, jr: Journal) -> None:
    """An aborted run (Ctrl-C twice) never reported the rows it had not reached, nor the ones
    in flight: the journal has them all ('sent' rows may have been applied: unknown)."""
    counts = jr.counts()
    report.counts.update(confirmed=counts["confirmed"], refused=counts["refused"],
                         unknown=counts["sent"] + counts["unknown"], pending=counts["planned"])


FIELDS = (
    "line", "op", "ref", "new_ref", "amount", "currency", "status", "transaction_id", "state",
    "attempts", "earlier_run", "detail",
)


class ResultsWriter:
    """Streams rows to ``path``. A write that fails mid-run (a full disk, a file system gone)
    never stops the run, whose money is already moving: the writer stops writing,
    :attr:`failed` says why and after how many rows, and the journal still has every row."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = path.open("w", encoding="utf-8", newline="")
        self._n = 0
        self.failed: str | None = None
        self._csv: Any = None
        if path.suffix.lower() == ".csv":
            self._csv = csv.DictWriter(self._fh, fieldnames=FIELDS, extrasaction="ignore")
            self._guarded(self._csv.writeheader)

    def _guarded(self, action: Any, *args: Any) -> None:
        if self._fh is None:
            return
        try:
            action(*args)
        except OSError as exc:
            self.failed = f"{exc.strerror or type(exc).__name__} after {self._n} row(s)"
            fh, self._fh = self._fh, None
            with contextlib.suppress(OSError):
                fh.close()

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        if self._csv is not None:
            self._guarded(self._csv.writerow,
                          {k: "" if v is None else v for k, v in record.items()})
        else:
            self._guarded(self._fh.write, json.dumps(record, separators=(",", ":")) + "\n")
        self._n += 1
        if self._n % 200 == 0 and self._fh is not None:
            self._guarded(self._fh.flush)

    def close(self) -> None:
        for step in ("flush", "close"):
            if self._fh is not None:
                self._guarded(getattr(self._fh, step))
        self._fh = None
