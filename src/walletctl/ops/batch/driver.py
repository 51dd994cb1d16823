"""Pass 2 of a batch, driven: the runner on one event loop, a gateway client per profile the
rows name, SIGINT / SIGTERM / SIGHUP (once: finish the requests in flight; twice: stop at
once, the journal resumable), the history's half of each row's record (:class:`BatchAudit`)
and the ``--results`` file (:class:`ResultsWriter`). What the operator sees is the caller's
:class:`Watch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from walletctl.constants import ExitCode
from walletctl.history import history_url, open_for
from walletctl.history.recorder import now_utc, os_user
from walletctl.history.store import Completion, HistoryStore, Intent
from walletctl.ops.batch.flow import stopped_by_signals

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import Journal, JournalRow, Plan
    from walletctl.ops.batch.runner import Gateway, RowResult, RunOptions, RunReport


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


# row status -> (history outcome, exit code of the row as a single command would have it)
_OUTCOME = {
    "confirmed": ("approved", ExitCode.OK),
    "refused": ("declined", ExitCode.DECLINED),
    "unknown": ("unknown", ExitCode.UNKNOWN_OUTCOME),
    "pending": ("error", ExitCode.NETWORK),  # never reached the gateway: nothing was sent
}


_GROUP = 64  # completions per history transaction


class BatchAudit:
    """The history's half of a real run: one entry per row, begun when the row is first sent
    in this run (with the journal's ``sent``, before the request leaves) and completed by its
    result; a row the pre-flight refuses is one entry, complete at birth. An entry is the
    transaction at the gateway (merchant, store, operation, new reference): a row begun again
    (a resumed run, another journal over the same file) gets the entry it already has, and
    completes an earlier, interrupted run's unknown entry. Completions are written in groups
    (with the next begins, every 64, and at the end)."""

    def __init__(self, store: HistoryStore, op: str, batch_id: str,
                 profile_for: Callable[[str | None], Profile], approval: int | None = None,
                 reason: str | None = None) -> None:
        self.store = store
        self.approval = approval  # the approval this batch spent (four eyes), if any
        self.reason = reason  # the batch's --reason, in every row's entry
        self.op = op
        self.batch_id = batch_id
        self._profile_for = profile_for
        self._user = os_user()
        self._host = socket.gethostname()
        self._open: dict[str, int] = {}  # new reference -> entry id, for rows sent this run
        self._done: list[tuple[int, Completion]] = []  # completions not yet written

    def flush(self) -> None:
        """Write the completions gathered so far (one transaction)."""
        if self._done:
            self.store.complete_many(self._done)
            self._done.clear()

    def close(self) -> None:
        self.flush()
        self.store.close()

    def _intent(self, row: JournalRow | RowResult, *, outcome: str | None = None,
                exit_code: int | None = None, note: str | None = None) -> Intent:
        prof = self._profile_for(row.profile)
        return Intent(time=now_utc(), os_user=self._user, host=self._host,
                      profile=prof.name, base_url=prof.base_url,
                      operation=self.op, original_ref=row.ref, new_ref=row.new_ref,
                      amount=f"{row.amount:f}", currency=row.currency, reason=self.reason,
                      batch_id=self.batch_id, batch_row=row.line,
                      outcome=outcome, exit_code=exit_code, note=note,
                      merchant_id=prof.merchant_id, store_id=prof.store_id,
                      approval=self.approval if outcome is None else None)

    def on_send(self, items: list[tuple[JournalRow, int]]) -> None:
        """Rows about to be sent (journal already 'sent'): their entries are begun in one
        transaction, with the completions gathered since the last write."""
        rows = [row for row, _attempt in items if row.new_ref not in self._open]  # not retries
        if not rows and not self._done:
            return
        ids = self.store.append_many([self._intent(row) for row in rows], self._done)
        self._done.clear()
        for row, entry in zip(rows, ids, strict=True):
            self._open[row.new_ref] = entry

    def on_result(self, result: RowResult) -> None:
        outcome, code = _OUTCOME.get(result.status, ("unknown", ExitCode.UNKNOWN_OUTCOME))
        note = result.detail or (f"state {result.txn_state}" if result.txn_state else None)
        entry = self._open.pop(result.new_ref, None)
        if entry is None:  # not sent in this run: an earlier, killed run may have sent it
            found = self.store.movement(self._intent(result))
            if found is not None and found[1] == "unknown":
                entry = found[0]
                note = f"resolved by a resumed batch run: {note or result.status}"
        if entry is not None:
            # Completions are written in groups: one lost to a kill leaves its entry
            # `unknown`, which the resumed run (or `history --unknown --reconcile`) completes.
            self._done.append((entry, Completion(time=now_utc(), outcome=outcome,
                                                 exit_code=int(code), note=note)))
            if len(self._done) >= _GROUP:
                self.flush()
        elif result.status == "refused" and not result.earlier_run:
            # refused by the pre-flight: nothing was sent, one entry complete at birth
            self.store.begin(self._intent(result, outcome="refused",
                                          exit_code=int(ExitCode.DECLINED), note=note))


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
