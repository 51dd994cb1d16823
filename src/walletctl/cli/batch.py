"""``capture|refund|reverse --batch``: the CLI side of batch follow-ups.

Not a command module: ``cli/followup.py`` calls :func:`run_batch_command` with its parsed
options. This module turns options into an ``ops.batch`` plan and run, shows progress on
stderr (terminal only), writes the summary to stdout, and returns the exit code.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import signal
import sys
import tempfile
from contextlib import ExitStack
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, UsageError, WalletctlError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import Journal, JournalRow
    from walletctl.ops.batch.plan import Plan
    from walletctl.ops.batch.results import ResultsWriter
    from walletctl.ops.batch.runner import Gateway, RowResult, RunOptions, RunReport

_BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{4,64}$")
MAX_CONCURRENCY = 512
DRY_RUN_TABLE_ROWS = 20
NAMED_ON_STDERR = 5  # refused / unknown rows named on stderr (all of them go to --results)


def run_batch_command(
    ctx: typer.Context,
    *,
    op: str,
    source: Path,
    journal: Path | None,
    resume: bool,
    concurrency: int,
    rate: float | None,
    results: Path | None,
    skip_invalid: bool,
    max_failures: int,
    batch_id: str | None,
    dry_run: bool,
    yes: bool,
    full_preflight: bool = False,
    offline: bool = False,
) -> int:
    """Plan, confirm and run a batch; returns an :class:`ExitCode` value."""
    from walletctl.cli.state import ENV, get_state
    from walletctl.ops.batch.journal import Journal, default_batch_id
    from walletctl.ops.batch.plan import plan_batch
    from walletctl.ops.batch.rows import OPS, Problem, Row
    from walletctl.ops.batch.runner import RunOptions, request_problem
    from walletctl.render.console import print_note

    if op not in OPS:
        raise UsageError(f"operation must be one of {', '.join(OPS)}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise UsageError(f"--concurrency: must be between 1 and {MAX_CONCURRENCY}")
    if rate is not None and not rate > 0:
        raise UsageError("--rate: must be greater than 0 (requests per second)")
    if max_failures < 1:
        raise UsageError("--max-failures: must be at least 1")
    if batch_id is not None and not _BATCH_ID.match(batch_id):
        raise UsageError("--batch-id: must be 4-64 letters, digits, '-' or '_'")
    if offline and not dry_run:
        raise UsageError("--offline: only with --dry-run (a real run must reach the gateway)")

    state = get_state(ctx)
    profile = state.profile()
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="walletctl-")))
        input_path, display, digest = _input(source, scratch)
        bid = batch_id or default_batch_id(op, None if digest else input_path, digest)
        journal_path = journal or _default_journal(source, op, bid)
        if resume and not journal_path.exists():
            raise UsageError(
                f"--resume: no journal at {journal_path}",
                hint="pass --journal PATH (and --batch-id) of the run to resume",
            )
        if dry_run:
            journal_path = _scratch_copy(journal_path, scratch)
        try:
            jr = Journal(journal_path, batch_id=bid, op=op, source=display)
        except OSError as exc:
            raise UsageError(f"--journal {journal_path}: cannot open ({exc.strerror})") from None
        stack.callback(jr.close)
        created = not jr.existed

        def check_profile(name: str) -> str | None:
            if name == profile.name:
                return None
            try:
                _load_profile(state, name)
            except ConfigError as exc:
                return exc.message
            return None

        profiles: dict[str, Profile] = {profile.name: profile}

        def check_request(row: Row) -> Problem | None:
            name = row.profile or profile.name
            if name not in profiles:
                profiles[name] = _load_profile(state, name)
            return request_problem(profiles[name], op, row)

        try:
            plan = plan_batch(
                input_path, jr, default_currency=profile.currency, skip_invalid=skip_invalid,
                check_profile=check_profile, display_name=display, check_request=check_request,
            )
        except WalletctlError:
            if created and not dry_run:
                jr.close()
                _remove_journal(journal_path)
            _print_problems_if_many(sys.exc_info()[1])
            raise
        for problem in plan.problems if skip_invalid else ():
            print_note(f"skipped invalid {problem}")
        if plan.invalid > len(plan.problems) and skip_invalid:
            print_note(f"... {plan.invalid - len(plan.problems)} more invalid rows skipped")
        if jr.existed and not dry_run and plan.done_before:
            print_note(f"resuming batch {bid}: {plan.done_before} row(s) already done "
                       f"(journal {journal_path})")

        options = RunOptions(op=op, concurrency=concurrency, rate=rate,
                             max_failures=max_failures, direct=not full_preflight,
                             predict=dry_run)
        if dry_run:
            report = None
            if not offline and plan.to_send:
                report = _run(state, profile, jr, plan, options, None)
            _dry_run(state, profile, op, jr, plan, bid, results, report)
            return int(ExitCode.OK) if report is None else _dry_run_exit(report)

        if op in ("refund", "reverse") and plan.to_send and not yes:
            summary = _money_summary(plan)
            if not ENV.is_interactive():
                raise UsageError(
                    f"{op} batch of {plan.to_send} row(s) ({summary}) needs confirmation",
                    hint="pass --yes to confirm without a terminal",
                )
            if not typer.confirm(
                f"{op.capitalize()} {plan.to_send} row(s), {summary}?", default=False, err=True
            ):
                print_note("aborted: nothing was sent")
                return int(ExitCode.USAGE)

        writer = None
        if results is not None:
            from walletctl.ops.batch.results import ResultsWriter

            try:
                writer = ResultsWriter(results)
            except OSError as exc:
                raise UsageError(f"--results {results}: cannot write ({exc.strerror})") from None
            stack.callback(writer.close)
        report = _run(state, profile, jr, plan, options, writer)
        _summary(state, op, bid, journal_path, results, plan, report)
        return int(_exit_code(report))


# ---- input / journal paths -----------------------------------------------------------------
def _input(source: Path, scratch: Path) -> tuple[Path, str, str | None]:
    """(path to read, name for messages, content digest for stdin)."""
    if str(source) == "-":
        from walletctl.ops.batch.rows import spool_stdin

        spooled = spool_stdin(sys.stdin.buffer, scratch / "stdin")
        digest = hashlib.sha256()
        with spooled.open("rb") as fh:
            while chunk := fh.read(1 << 16):
                digest.update(chunk)
        return spooled, "<stdin>", digest.hexdigest()
    if not source.is_file():
        raise UsageError(f"--batch {source}: no such file")
    return source, str(source), None


def _default_journal(source: Path, op: str, batch_id: str) -> Path:
    """Beside the input (``orders.csv`` -> ``orders.csv.capture.journal``); stdin: the cwd."""
    if str(source) == "-":
        return Path.cwd() / f"walletctl-{op}-{batch_id}.journal"
    return source.with_name(f"{source.name}.{op}.journal")


def _scratch_copy(journal_path: Path, scratch: Path) -> Path:
    """Dry runs plan into a copy: the real journal is never touched."""
    import sqlite3

    copy = scratch / "dry-run.journal"
    if journal_path.exists():
        src = sqlite3.connect(str(journal_path))
        dst = sqlite3.connect(str(copy))
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
    return copy


def _remove_journal(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _load_profile(state: Any, name: str) -> Profile:
    from walletctl.config.store import load_profile

    prof = load_profile(name, state.config_path)
    if state.timeout is not None:
        from dataclasses import replace

        prof = replace(prof, timeout=state.timeout)
    return prof


def _print_problems_if_many(exc: BaseException | None) -> None:
    from walletctl.ops.batch.plan import BatchValidationError

    if isinstance(exc, BatchValidationError) and exc.total > 3:
        shown = exc.problems[:MAX_SHOWN]
        for field, rule in shown:
            sys.stderr.write(f"walletctl: {field}: {rule}\n")
        if exc.total > len(shown):
            sys.stderr.write(f"walletctl: ... and {exc.total - len(shown)} more\n")


MAX_SHOWN = 20


def _money_summary(plan: Plan) -> str:
    from walletctl.models.money import format_major

    return ", ".join(format_major(v, c) for c, v in sorted(plan.totals.items())) or "nothing"


# ---- dry run ---------------------------------------------------------------------------------
def _dry_run_exit(report: RunReport) -> int:
    """A checked dry run exits as the real run would stop: 9/7 when the gateway refuses the
    credentials or cannot be reached, 6 when lookups kept failing, else 0 (predicted
    refusals are listed, not an error)."""
    if report.interrupted:
        return int(ExitCode.INTERRUPTED)
    if report.fatal_code is not None:
        return report.fatal_code
    if report.breaker_open:
        return int(ExitCode.GATEWAY)
    return int(ExitCode.OK)


def _dry_status(row: JournalRow, checked: bool) -> str:
    """done-earlier | would-send | would-refuse | unchecked (the lookup did not answer)."""
    from walletctl.ops.batch.journal import FINAL_STATES

    if row.state == "refused" and row.attempts == 0:  # refused by this check, never sent
        return "would-refuse"
    if row.state in FINAL_STATES:
        return "done-earlier"
    if not checked or row.detail == "would-send":
        return "would-send"
    return "unchecked"


def _dry_run(
    state: Any, profile: Profile, op: str, jr: Journal, plan: Plan, bid: str,
    results: Path | None, report: RunReport | None = None,
) -> None:
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
            status = _dry_status(row, report is not None)
            tally[status] = tally.get(status, 0) + 1
            body = build_request(profile, op, row).to_wire(profile.amount_format)  # type: ignore[arg-type]
            record = {"line": row.line, "op": op, "ref": row.ref, "new_ref": row.new_ref,
                      "amount": f"{row.amount:f}", "currency": row.currency, "status": status}
            if status in ("would-refuse", "unchecked"):
                record["reason"] = row.detail
                if tally[status] <= NAMED_ON_STDERR:
                    print_note(f"line {row.line}: {row.ref}: {status}: {row.detail}")
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

    t = Table(title=f"dry run: {op} batch {bid} (nothing sent)")
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
        f"would send {summary['would_send']} row(s) ({_money_summary(plan)}){refuse}; "
        f"{summary['done_earlier']} done earlier; {plan.invalid} invalid skipped"
    )


# ---- the run ---------------------------------------------------------------------------------
def _run(
    state: Any, profile: Profile, jr: Journal, plan: Plan, options: RunOptions,
    writer: ResultsWriter | None,
) -> RunReport:
    from walletctl.ops.batch.runner import BatchRunner
    from walletctl.render.console import err, print_note

    concurrency = options.concurrency
    progress, update = _progress(plan, err().is_terminal and not options.predict)
    named = {"refused": 0, "unknown": 0}

    def on_result(result: RowResult) -> None:
        if writer is not None:
            writer.write(result.as_dict())
        update(result)
        if result.status in named and not options.predict:
            named[result.status] += 1
            if named[result.status] <= NAMED_ON_STDERR:
                print_note(f"line {result.line}: {result.ref}: {result.status}: "
                           f"{result.detail or result.txn_state or ''}")

    async def main() -> RunReport:
        import httpx

        from walletctl.cli.state import ENV
        from walletctl.client.gateway import AsyncGatewayClient

        limits = httpx.Limits(max_connections=concurrency,
                              max_keepalive_connections=concurrency)
        clients: dict[str, AsyncGatewayClient] = {}

        def gateway_for(name: str | None) -> Gateway:
            key = name or profile.name
            if key not in clients:
                prof = profile if key == profile.name else _load_profile(state, key)
                clients[key] = AsyncGatewayClient(prof, transport=ENV.async_transport,
                                                  limits=limits)
            return clients[key]

        runner = BatchRunner(jr, gateway_for, options, on_result=on_result)
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                print_note("stopping: finishing requests in flight (Ctrl-C again to abort "
                           "now; the journal stays resumable)")
                runner.stop()
            elif task is not None:
                task.cancel()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return await runner.run()
        except asyncio.CancelledError:
            runner.report.interrupted = True
            return runner.report
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            for client in clients.values():
                await client.aclose()

    try:
        if progress is not None:
            with progress:
                return asyncio.run(main())
        return asyncio.run(main())
    finally:
        jr.commit()


def _progress(plan: Plan, on_terminal: bool, console: Any = None) -> tuple[Any, Any]:
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
    task = progress.add_task("batch", total=plan.rows, failed=0, unknown=0, rate=0.0)
    counts = {"refused": 0, "unknown": 0}

    def update(result: RowResult) -> None:
        if result.status in counts:
            counts[result.status] += 1
        progress.update(task, advance=1, failed=counts["refused"], unknown=counts["unknown"])
        t = progress.tasks[0]
        progress.update(task, rate=(t.speed or 0.0))

    return progress, update


# ---- summary and exit code -------------------------------------------------------------------
def _exit_code(report: RunReport) -> ExitCode:
    if report.interrupted:
        return ExitCode.INTERRUPTED
    if report.fatal_code is not None:
        return ExitCode(report.fatal_code)
    if report.breaker_open:
        return ExitCode.GATEWAY
    if report.counts.get("unknown", 0):
        return ExitCode.UNKNOWN_OUTCOME
    if report.counts.get("pending", 0):
        return ExitCode.GATEWAY
    if report.counts.get("refused", 0):
        return ExitCode.DECLINED
    return ExitCode.OK


def _summary(
    state: Any, op: str, bid: str, journal_path: Path, results: Path | None, plan: Plan,
    report: RunReport,
) -> None:
    from walletctl.render.console import out, print_note
    from walletctl.render.output import write_json

    rate = report.rows / report.elapsed if report.elapsed > 0 else 0.0
    data: dict[str, Any] = {
        "batch_id": bid, "op": op, "journal": str(journal_path),
        "results": str(results) if results else None,
        "rows": report.rows, **report.counts, "earlier_run": report.earlier,
        "invalid_skipped": plan.invalid,
        "confirmed_totals": {c: f"{v:f}" for c, v in sorted(report.confirmed_totals.items())},
        "requests": report.requests, "events": dict(sorted(report.events.items())),
        "elapsed_s": round(report.elapsed, 3),
        "rows_per_s": round(rate, 1), "interrupted": report.interrupted,
        "circuit_breaker_open": report.breaker_open, "stopped_by": report.fatal,
        "exit_code": int(_exit_code(report)),
    }
    left = report.counts.get("pending", 0) + report.counts.get("unknown", 0)
    if state.output_format != "table":
        write_json(data)
    else:
        from rich.table import Table

        from walletctl.models.money import format_major

        t = Table(title=f"{op} batch {bid}")
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
    unnamed = max(0, report.counts.get("refused", 0) - NAMED_ON_STDERR) + max(
        0, report.counts.get("unknown", 0) - NAMED_ON_STDERR)
    if unnamed:
        where = f"all are in {results}" if results else "pass --results FILE to list them all"
        print_note(f"... and {unnamed} more refused/unknown row(s): {where}")
    if left:
        print_note(f"{left} row(s) left: run the same command again (or add --resume) to "
                   "reconcile and continue; nothing is sent twice")
