"""Rendering of batch runs (``capture|refund|reverse --batch``): the dry run's rows, the
progress bar on stderr, and the summary (a table on a terminal, JSON otherwise)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import Journal, JournalRow
    from walletctl.ops.batch.plan import Plan
    from walletctl.ops.batch.runner import RowResult, RunReport

DRY_RUN_TABLE_ROWS = 20
NAMED_ON_STDERR = 5  # refused / unknown rows named on stderr (all of them go to --results)


def money_summary(plan: Plan) -> str:
    from walletctl.models.money import format_major

    return ", ".join(format_major(v, c) for c, v in sorted(plan.totals.items())) or "nothing"


def dry_status(row: JournalRow, checked: bool) -> str:
    """done-earlier | would-send | would-refuse | unchecked (the lookup did not answer)."""
    from walletctl.ops.batch.journal import FINAL_STATES

    if row.state == "refused" and row.attempts == 0:  # refused by this check, never sent
        return "would-refuse"
    if row.state in FINAL_STATES:
        return "done-earlier"
    if not checked or row.detail == "would-send":
        return "would-send"
    return "unchecked"


def dry_run_rows(
    state: Any, profile: Profile, op: str, jr: Journal, plan: Plan, bid: str,
    results: Path | None, report: RunReport | None = None,
    profile_for: Callable[[str | None], Profile] | None = None,
) -> None:
    """Each row as the real run would send it: its body is built with the row's own profile
    (``profile`` column), as the runner does."""
    from walletctl.models.base import dumps
    from walletctl.ops.batch.results import ResultsWriter
    from walletctl.ops.batch.runner import build_request
    from walletctl.render.console import out, print_note

    table = state.output_format == "table"
    writer = ResultsWriter(results) if results is not None else None
    shown: list[dict[str, Any]] = []
    stdout = sys.stdout
    tally: dict[str, int] = {}
    try:
        for row in jr.rows():
            status = dry_status(row, report is not None)
            tally[status] = tally.get(status, 0) + 1
            prof = profile if profile_for is None else profile_for(row.profile)
            body = build_request(prof, op, row).to_wire(prof.amount_format)  # type: ignore[arg-type]
            record = {"line": row.line, "op": op, "ref": row.ref, "new_ref": row.new_ref,
                      "amount": f"{row.amount:f}", "currency": row.currency, "status": status}
            if status in ("would-refuse", "unchecked"):
                # an unchecked row's journal detail is an earlier run's: say this run's reason
                record["reason"] = row.detail if status == "would-refuse" else (
                    f"not checked: {report.fatal}" if report is not None and report.fatal
                    else "not checked: the lookup of its original got no answer")
                if tally[status] <= NAMED_ON_STDERR:
                    print_note(f"line {row.line}: {row.ref}: {status}: {record['reason']}")
            if writer is not None:
                writer.write(record)
            if table:
                if len(shown) < DRY_RUN_TABLE_ROWS:
                    shown.append(record)
            else:
                stdout.write(dumps({**record, "request": body}) + "\n")
    finally:
        if writer is not None:
            writer.close()
    summary = {
        "batch_id": bid, "op": op, "dry_run": True, "rows": plan.rows,
        "would_send": tally.get("would-send", 0), "would_refuse": tally.get("would-refuse", 0),
        "unchecked": tally.get("unchecked", 0), "done_earlier": tally.get("done-earlier", 0),
        "invalid_skipped": plan.invalid,
        "totals": {c: f"{v:f}" for c, v in sorted(plan.totals.items())},
    }
    if not table:
        return
    from rich.table import Table

    tag = "PRODUCTION " if profile.is_production else ""
    t = Table(title=f"{tag}dry run: {op} batch {bid} (nothing sent)")
    for col in ("line", "ref", "new_ref", "amount", "currency", "status"):
        t.add_column(col, justify="right" if col in ("line", "amount") else "left")
    for r in shown:
        t.add_row(str(r["line"]), r["ref"], r["new_ref"], r["amount"], r["currency"], r["status"])
    console = out()
    console.print(t)
    if plan.rows > len(shown):
        console.print(f"... {plan.rows - len(shown)} more row(s)")
    refuse = f"; would refuse {summary['would_refuse']}" if summary["would_refuse"] else ""
    console.print(
        f"would send {summary['would_send']} row(s) ({money_summary(plan)}){refuse}; "
        f"{summary['done_earlier']} done earlier; {plan.invalid} invalid skipped"
    )


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

    from walletctl.render.console import err

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("refused {task.fields[failed]} · unknown {task.fields[unknown]} · "
                   "{task.fields[rate]:.0f} rows/s"),
        TimeElapsedColumn(), TimeRemainingColumn(),
        console=console or err(), transient=False,
    )
    task = progress.add_task(label, total=plan.rows, failed=0, unknown=0, rate=0.0)
    counts = {"refused": 0, "unknown": 0}

    def update(result: RowResult) -> None:
        if result.status in counts:
            counts[result.status] += 1
        progress.update(task, advance=1, failed=counts["refused"], unknown=counts["unknown"])
        t = progress.tasks[0]
        progress.update(task, rate=(t.speed or 0.0))

    return progress, update


def summary(
    state: Any, op: str, bid: str, journal_path: Path, results: Path | None, plan: Plan,
    report: RunReport, exit_code: int, *, production: Sequence[str] = (),
) -> None:
    """The run's counts; ``production`` names the production profiles it used (then the
    table starts with a PRODUCTION line and the data formats say ``"environment":
    "production"``)."""
    from walletctl.render.console import out, print_note
    from walletctl.render.output import write_json, write_ndjson

    rate = report.rows / report.elapsed if report.elapsed > 0 else 0.0
    data: dict[str, Any] = {
        "batch_id": bid, "op": op,
        "environment": "production" if production else "test",
        "production_profiles": list(production), "journal": str(journal_path),
        "results": str(results) if results else None,
        "rows": report.rows, **report.counts, "earlier_run": report.earlier,
        "invalid_skipped": plan.invalid,
        "confirmed_totals": {c: f"{v:f}" for c, v in sorted(report.confirmed_totals.items())},
        "requests": report.requests, "events": dict(sorted(report.events.items())),
        "elapsed_s": round(report.elapsed, 3),
        "rows_per_s": round(rate, 1), "interrupted": report.interrupted,
        "circuit_breaker_open": report.breaker_open, "stopped_by": report.fatal,
        "exit_code": exit_code,
    }
    left = report.counts.get("pending", 0) + report.counts.get("unknown", 0)
    if state.output_format == "ndjson":  # one line, like every NDJSON document
        write_ndjson([data])
    elif state.output_format != "table":
        write_json(data)
    else:
        from rich.table import Table

        from walletctl.models.money import format_major

        if production:  # plain words at the start of a line: NO_COLOR, any width
            out().print(f"PRODUCTION: {op} batch against production profile "
                        f"{', '.join(production)}", markup=False, soft_wrap=True)
        t = Table(title=f"{'PRODUCTION ' if production else ''}{op} batch {bid}")
        t.add_column("rows", justify="left")
        t.add_column("count", justify="right")
        t.add_column("amount", justify="right")
        totals = ", ".join(format_major(Decimal(v), c)
                           for c, v in data["confirmed_totals"].items())
        t.add_row("confirmed", str(report.counts["confirmed"]), totals)
        t.add_row("done by an earlier run (included above)", str(report.earlier), "")
        t.add_row("refused", str(report.counts["refused"]), "")
        t.add_row("unknown (reconcile)", str(report.counts["unknown"]), "")
        t.add_row("not sent", str(report.counts["pending"]), "")
        if plan.invalid:
            t.add_row("invalid, skipped", str(plan.invalid), "")
        out().print(t)
        out().print(f"{report.requests} requests in {report.elapsed:.1f} s "
                    f"({rate:.0f} rows/s) · journal {journal_path}")
    if report.breaker_open:
        print_note(f"circuit breaker open after {report.breaker_threshold} consecutive gateway "
                   f"failures ({report.breaker_reason}); {left} row(s) left")
    if report.fatal:
        print_note(f"stopped: {report.fatal}")
        if report.fatal_hint:
            sys.stderr.write(f"hint: {report.fatal_hint}\n")
    unnamed = max(0, report.counts.get("refused", 0) - NAMED_ON_STDERR) + max(
        0, report.counts.get("unknown", 0) - NAMED_ON_STDERR)
    if unnamed:
        where = f"all are in {results}" if results else "pass --results FILE to list them all"
        print_note(f"... and {unnamed} more refused/unknown row(s): {where}")
    if left:
        print_note(f"{left} row(s) left: run the same command again (or add --resume) to "
                   "reconcile and continue; nothing is sent twice")
