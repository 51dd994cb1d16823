"""Rendering of batch runs (``capture|refund|reverse --batch``): the dry run's rows, the
progress bar and the rows named on stderr, and the summary (a table on a terminal, JSON
otherwise)."""

from __future__ import annotations

import sys
import time
from contextlib import AbstractContextManager, nullcontext
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from walletctl.models.money import format_major
from walletctl.render.console import (
    err,
    escape,
    log_event,
    log_json,
    out,
    print_message,
    print_note,
    print_stopped,
)
from walletctl.render.fit import fit_phrases, print_table
from walletctl.render.formats import View, shape, show
from walletctl.render.output import flat

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.job import BatchResult
    from walletctl.ops.batch.journal import BatchValidationError, Plan
    from walletctl.ops.batch.runner import RowResult

DRY_RUN_TABLE_ROWS = 20
NAMED_ON_STDERR = 5  # refused / unknown rows named on stderr (all of them go to --results)
MAX_SHOWN = 20  # invalid rows listed on stderr

render_note = print_note  # the batch's notes (rows skipped, a run resumed) on stderr


def render_batch(output_format: str, result: BatchResult) -> int:
    """The batch's output (a dry run's rows, or the run's summary); returns its exit code."""
    if result.aborted:
        print_note("aborted: nothing was sent")
    elif result.dry_run:
        _dry_run(output_format, result)
        if result.report is not None:
            print_stopped(result.report.fatal, result.report.fatal_hint, "pre-flight stopped")
    else:
        assert result.report is not None
        summary(output_format, result)
        if result.results_failed is not None:
            print_note(f"--results {result.results}: could not be written "
                       f"({result.results_failed}); every row is in the journal "
                       f"{result.journal}")
    return result.code


def _row_note(text: str) -> None:
    """A refused / unknown / pending row named on stderr: a note on a terminal, a
    ``warning`` under --log-format json (a CI log filters on the level)."""
    if log_json():
        log_event("warning", text)
    else:
        print_note(text)


def render_invalid_rows(exc: BatchValidationError) -> None:
    """More than the error line shows (3): up to MAX_SHOWN of them, one per line."""
    if exc.total <= 3:
        return
    shown = exc.problems[:MAX_SHOWN]
    for where, rule in shown:
        print_note(f"{where}: {rule}")
    if exc.total > len(shown):
        print_note(f"... and {exc.total - len(shown)} more")


def _dry_run(output_format: str, result: BatchResult) -> None:
    """Each row as the real run would send it: NDJSON (with its request) or a table of the
    first rows and a line of counts."""
    from walletctl.models.base import dumps

    table = shape(output_format) == "table"
    shown: list[dict[str, Any]] = []
    tally: dict[str, int] = {}
    for row in result.dry_rows:
        status = row.record["status"]
        tally[status] = tally.get(status, 0) + 1
        if "reason" in row.record and tally[status] <= NAMED_ON_STDERR:
            _row_note(f"line {row.record['line']}: {row.record['ref']}: {status}: "
                      f"{row.record['reason']}")
        if not table:
            sys.stdout.write(dumps({**row.record, "request": row.request}) + "\n")
        elif len(shown) < DRY_RUN_TABLE_ROWS:
            shown.append(row.record)
    if table:
        _dry_run_table(result, shown, tally)


def _dry_run_table(result: BatchResult, shown: list[dict[str, Any]],
                   tally: dict[str, int]) -> None:
    plan = result.plan
    tag = "PRODUCTION " if result.profile.is_production else ""
    columns = ("line", "ref", "new_ref", "amount", "currency", "status")
    print_table(f"{tag}dry run: {result.op} batch {result.batch_id} (nothing sent)",
                columns, [[escape(str(r[c])) for c in columns] for r in shown],
                justify={0: "right", 3: "right"}, no_wrap=(0, 3), drop=(2, 4))
    if plan.rows > len(shown):
        print_message(f"... {plan.rows - len(shown)} more row(s)")
    refuse = tally.get("would-refuse", 0)
    refused = f"; would refuse {refuse}" if refuse else ""
    print_message(
        f"would send {tally.get('would-send', 0)} row(s) ({plan.money()}){refused}; "
        f"{tally.get('done-earlier', 0)} done earlier; {plan.invalid} invalid skipped"
    )


class BatchWatch:
    """A run as the operator sees it: the progress bar (stderr, a terminal, a real run), and
    the first refused / unknown / pending rows named on stderr."""

    def __init__(self, profile: Profile, plan: Plan, predict: bool) -> None:
        self.predict = predict
        self.progress, self.update = progress_bar(
            plan, err().is_terminal and not predict,
            label="PRODUCTION batch" if profile.is_production else "batch")
        self.named = {"refused": 0, "unknown": 0, "pending": 0}
        self.total = plan.rows
        self.tally: dict[str, int] = {}

    def live(self) -> AbstractContextManager[object]:
        return self.progress if self.progress is not None else nullcontext()

    def on_result(self, result: RowResult) -> None:
        from walletctl.ops.batch.runner import BatchRunner

        self.update(result)
        if log_json() and not self.predict:
            self._event(result)
        # A row left pending after its retries says why (a halted run's rows all share
        # the one reason the summary gives).
        if result.status in self.named and not self.predict and not (
                result.status == "pending"
                and (result.detail or "").startswith(BatchRunner.NOT_DONE)):
            self.named[result.status] += 1
            if self.named[result.status] <= NAMED_ON_STDERR:
                _row_note(f"line {result.line}: {result.ref}: {result.status}: "
                          f"{result.detail or result.txn_state or ''}")

    def _event(self, result: RowResult) -> None:
        """``--log-format json``: a progress event with the counts so far, about every 1% of
        the rows (and at the last one)."""
        self.tally[result.status] = self.tally.get(result.status, 0) + 1
        done = sum(self.tally.values())
        if done % max(1, self.total // 100) and done != self.total:
            return
        log_event("info", f"batch: {done} of {self.total} rows", event="batch.progress",
                  done=done, total=self.total, counts=dict(self.tally))

    def stopping(self) -> None:
        print_note("stopping: finishing requests in flight (Ctrl-C again to abort now; the "
                   "journal stays resumable)")


def progress_bar(plan: Plan, on_terminal: bool, console: Any = None,
                 label: str = "batch") -> tuple[Any, Any]:
    if not on_terminal:
        return None, lambda result: None
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = console or err()
    counts_text = ("refused {task.fields[failed]} · unknown {task.fields[unknown]} · "
                   "{task.fields[rate]:.0f} rows/s")
    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TaskProgressColumn(), TextColumn(counts_text), TimeElapsedColumn(),
                          TimeRemainingColumn()]
    hidden: list[str] = []
    if console.width < 80:  # the bar fits a narrow terminal: fewer columns, never cut off
        columns = [TextColumn("{task.description}"), BarColumn(bar_width=8),
                   MofNCompleteColumn(), TextColumn(counts_text)]
        hidden = ["percent", "elapsed", "remaining"]
    if console.width < 64:  # refused and unknown rows are named on stderr as they come
        columns = [TextColumn("{task.description}"), MofNCompleteColumn(),
                   TaskProgressColumn(), TextColumn("{task.fields[rate]:.0f} rows/s")]
        hidden = ["bar", "refused", "unknown", "elapsed", "remaining"]  # such rows: named
    if hidden:  # said as a table says its hidden columns
        console.print(f"(hidden at {console.width} columns: {', '.join(hidden)})",
                      soft_wrap=False, highlight=False)
    progress = Progress(*columns, console=console, transient=False)
    task = progress.add_task(label, total=plan.rows, failed=0, unknown=0, rate=0.0)
    counts = {"refused": 0, "unknown": 0, "sent": 0}
    first: list[float] = []  # when the first row of this run was answered

    def update(result: RowResult) -> None:
        from walletctl.ops.batch.flow import FlowControlled

        if result.status == "pending" and (result.detail or "").startswith(
                FlowControlled.NOT_DONE):
            return  # not sent (the run stopped): the bar stays at what was done
        if result.status in counts:
            counts[result.status] += 1
        if not result.earlier_run:  # the rate counts this run's rows only, not skipped ones
            counts["sent"] += 1
            if not first:
                first.append(time.monotonic())
        took = time.monotonic() - first[0] if first else 0.0
        progress.update(task, advance=1, failed=counts["refused"], unknown=counts["unknown"],
                        rate=counts["sent"] / took if took > 0 else 0.0)

    return progress, update


def summary(output_format: str, result: BatchResult) -> None:
    """The run's counts (and the production profiles it used)."""
    report, production, results = result.report, result.production, result.results
    assert report is not None
    # rows this run sent over the time the run took: neither rows done by an earlier run
    # nor rows left unsent (interrupted, stopped) count
    rate = report.sent_rows / report.elapsed if report.elapsed > 0 else 0.0
    data: dict[str, Any] = {
        "batch_id": result.batch_id, "op": result.op,
        "environment": "production" if production else "test",
        "production_profiles": list(production), "journal": str(result.journal),
        "results": str(results) if results else None,
        "rows": report.rows, **report.counts, "earlier_run": report.earlier,
        "invalid_skipped": result.plan.invalid,
        "confirmed_totals": {c: f"{v:f}" for c, v in sorted(report.confirmed_totals.items())},
        "requests": report.requests, "events": dict(sorted(report.events.items())),
        "elapsed_s": round(report.elapsed, 3),
        "rows_per_s": round(rate, 1), "interrupted": report.interrupted,
        "circuit_breaker_open": report.breaker_open, "stopped_by": report.fatal,
        "exit_code": result.code,
    }
    show(View(rows=[data], document=data, flat=[flat(data)],
              table=lambda: _summary_table(result, data, rate)), output_format)
    _summary_notes(result)


def _summary_table(result: BatchResult, data: dict[str, Any], rate: float) -> None:
    report, op, production = result.report, result.op, result.production
    assert report is not None
    if production:  # plain words at the start of a line: NO_COLOR, any width
        print_message(f"PRODUCTION: {op} batch against production profile "
                      f"{', '.join(production)}")
    # an amount and its currency are never parted: one total a line, the column unwrapped
    totals = "\n".join(format_major(Decimal(v), c) for c, v in data["confirmed_totals"].items())
    rows = [["confirmed", str(report.counts["confirmed"]), totals],
            ["done by an earlier run (included above)", str(report.earlier), ""],
            ["refused", str(report.counts["refused"]), ""],
            ["unknown (reconcile)", str(report.counts["unknown"]), ""],
            ["not sent", str(report.counts["pending"]), ""]]
    if result.plan.invalid:
        rows.append(["invalid, skipped", str(result.plan.invalid), ""])
    print_table(f"{'PRODUCTION ' if production else ''}{op} batch {result.batch_id}",
                ["rows", "count", "amount"], rows, justify={1: "right", 2: "right"},
                no_wrap=(1, 2))
    phrases = [f"{report.requests} requests", f"for {report.sent_rows} rows",
               f"in {report.elapsed:.1f} s", f"({rate:.0f} rows/s)",
               f"· journal {escape(str(result.journal))}"]
    if out().is_terminal:  # between phrases; a path wider than the terminal stays whole
        out().print(fit_phrases(phrases), soft_wrap=True, crop=False, highlight=False)
    else:  # a table asked for in a pipe: 80 columns, like the table above it
        out().print(" ".join(phrases))


def _summary_notes(result: BatchResult) -> None:
    """On stderr: why the run stopped, the rows not named, what to do with the rows left."""
    report, results = result.report, result.results
    assert report is not None
    left = report.counts.get("pending", 0) + report.counts.get("unknown", 0)
    if report.breaker_open:
        print_note(f"circuit breaker open after {report.breaker_threshold} consecutive gateway "
                   f"failures ({report.breaker_reason}); {left} row(s) left")
    print_stopped(report.fatal, report.fatal_hint)
    unnamed = max(0, report.counts.get("refused", 0) - NAMED_ON_STDERR) + max(
        0, report.counts.get("unknown", 0) - NAMED_ON_STDERR)
    if unnamed:
        where = f"all are in {results}" if results else "pass --results FILE to list them all"
        _row_note(f"... and {unnamed} more refused/unknown row(s): {where}")
    if left:
        print_note(f"{left} row(s) left: run the same command again (or add --resume) to "
                   "reconcile and continue; nothing is sent twice")
