"""``capture|refund|reverse --batch``: the CLI side of batch follow-ups.

Not a command module: ``cli/followup.py`` calls :func:`run_batch_command` with its parsed
options. This module turns options into an ``ops.batch`` plan, confirms it, has
:mod:`walletctl.cli.batch_run` run it (progress on stderr, terminal only), writes the summary to
stdout, and returns the exit code.
"""

from __future__ import annotations

import re
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from walletctl.cli.batch_approval import applies, file_hash, four_eyes
from walletctl.cli.batch_run import load_row_profile, profile_loader, run_batch
from walletctl.cli.flow import check_flow_options, stop_code
from walletctl.constants import ExitCode
from walletctl.errors import AwaitingApprovalError, ConfigError, UsageError, WalletctlError
from walletctl.render.batch import dry_run_rows, money_summary
from walletctl.render.batch import summary as render_summary

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.runner import RunReport

_BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{4,64}$")


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
    allow_duplicate: bool = False,
    approval: int | None = None,
    confirm_profile: list[str] | None = None,
) -> int:
    """Plan, confirm and run a batch; returns an :class:`ExitCode` value."""
    from walletctl.cli.production import confirm_profiles, refuse_unconfirmed
    from walletctl.cli.state import ENV, get_state
    from walletctl.ops.batch.journal import Journal, default_batch_id
    from walletctl.ops.batch.plan import plan_batch
    from walletctl.ops.batch.rows import OPS, Problem, Row
    from walletctl.ops.batch.runner import RunOptions, request_problem
    from walletctl.render.console import print_note

    if op not in OPS:
        raise UsageError(f"operation must be one of {', '.join(OPS)}")
    check_flow_options(concurrency, rate, max_failures)
    if batch_id is not None and not _BATCH_ID.match(batch_id):
        raise UsageError("--batch-id: must be 4-64 letters, digits, '-' or '_'")
    if offline and not dry_run:
        raise UsageError("--offline: only with --dry-run (a real run must reach the gateway)")

    from walletctl.ops.user_files import check_output

    # the files a run writes, before anything is read or sent: a FIFO would block, a
    # directory or /dev/full would fail after the money moved
    check_output(journal, "--journal", write=not dry_run)
    check_output(results, "--results")
    state = get_state(ctx)
    profile = state.profile()
    if not dry_run:  # a production profile in a pipe: refused before any file is touched
        refuse_unconfirmed(profile, confirm_profile or (), action=f"run the {op} batch {source}")
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="walletctl-")))
        input_path, display, digest = _input(source, scratch)
        # four eyes bind the file's content: read it once for its hash, once to plan, and
        # refuse it if it changed in between
        bound = file_hash(input_path, digest) if applies(profile, op, approval,
                                                           dry_run) else None
        bid = batch_id or default_batch_id(op, None if digest else input_path, digest)
        journal_path = journal or _default_journal(source, op, bid)
        if resume and not journal_path.exists():
            raise UsageError(
                f"--resume: no journal at {journal_path}",
                hint="pass --journal PATH (and --batch-id) of the run to resume",
            )
        if journal is None:  # the default one, beside the input
            check_output(journal_path, "--journal", write=not dry_run)
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
                load_row_profile(state, name)
            except ConfigError as exc:
                return exc.message
            return None

        profiles: dict[str, Profile] = {profile.name: profile}

        def check_request(row: Row) -> Problem | None:
            name = row.profile or profile.name
            if name not in profiles:
                profiles[name] = load_row_profile(state, name)
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
        def approved(spend: bool) -> int | None:
            """File the batch for approval, check the one given, or (last) spend it."""
            if bound is None or not plan.to_send:
                return approval
            return four_eyes(state, profile, op, jr, plan, display=display, sha256=bound,
                             path=input_path, approval=approval, batch_id=bid, spend=spend)

        if bound is not None and plan.to_send:
            try:
                approved(spend=False)
            except AwaitingApprovalError:
                if created:  # nothing was sent: the next run (with --approval) starts afresh
                    jr.close()
                    _remove_journal(journal_path)
                raise

        options = RunOptions(op=op, concurrency=concurrency, rate=rate,
                             max_failures=max_failures, direct=not full_preflight,
                             predict=dry_run, allow_duplicate=allow_duplicate)
        try:  # a production profile (the command's or a row's): its name typed, or given
            typed = confirm_profiles(profiles.values(), confirm_profile or (),
                                     action=f"{op} {plan.to_send} row(s) ({money_summary(plan)})",
                                     required=not dry_run and plan.to_send > 0)
        except UsageError:
            if created and not dry_run:  # refused: no journal left behind
                jr.close()
                _remove_journal(journal_path)
            raise
        if dry_run:
            report = None
            if not offline and plan.to_send:
                report = run_batch(state, profile, jr, plan, options, None)
            dry_run_rows(state, profile, op, jr, plan, bid, results, report,
                         profile_for=profile_loader(state, profile))
            if report is not None and report.fatal:
                print_note(f"pre-flight stopped: {report.fatal}")
                if report.fatal_hint:
                    sys.stderr.write(f"hint: {report.fatal_hint}\n")
            return int(ExitCode.OK) if report is None else _dry_run_exit(report)

        if op in ("refund", "reverse") and plan.to_send and not yes and not typed:
            summary = money_summary(plan)
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

        approval = approved(spend=True)  # confirmed: spent before the first row is sent
        writer = None
        if results is not None:
            from walletctl.ops.batch.results import ResultsWriter

            try:
                writer = ResultsWriter(results)
            except OSError as exc:
                raise UsageError(f"--results {results}: cannot write ({exc.strerror})") from None
            stack.callback(writer.close)
        report = run_batch(state, profile, jr, plan, options, writer, approval=approval)
        code = int(_exit_code(report))
        if writer is not None:
            writer.close()
            if writer.failed is not None and code == ExitCode.OK:
                code = int(ExitCode.USAGE)  # the run is done, but the file asked for is not
        render_summary(state, op, bid, journal_path, results, plan, report, code,
                       production=[p.name for p in profiles.values() if p.is_production])
        if writer is not None and writer.failed is not None:
            print_note(f"--results {results}: could not be written ({writer.failed}); every "
                       f"row is in the journal {journal_path}")
        return code


# ---- input / journal paths -----------------------------------------------------------------
def _input(source: Path, scratch: Path) -> tuple[Path, str, str | None]:
    """(path to read, name for messages, content digest for stdin)."""
    if str(source) == "-":
        from walletctl.ops.batch.rows import spool_stdin

        spooled = spool_stdin(sys.stdin.buffer, scratch / "stdin")
        return spooled, "<stdin>", file_hash(spooled, None)
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


def _print_problems_if_many(exc: BaseException | None) -> None:
    from walletctl.ops.batch.plan import BatchValidationError

    if isinstance(exc, BatchValidationError) and exc.total > 3:
        shown = exc.problems[:MAX_SHOWN]
        for field, rule in shown:
            sys.stderr.write(f"walletctl: {field}: {rule}\n")
        if exc.total > len(shown):
            sys.stderr.write(f"walletctl: ... and {exc.total - len(shown)} more\n")


MAX_SHOWN = 20


# ---- dry run ---------------------------------------------------------------------------------
def _dry_run_exit(report: RunReport) -> int:
    """A checked dry run exits as the real run would stop: 9/7 when the gateway refuses the
    credentials or cannot be reached, 6 when lookups kept failing, else 0 (predicted
    refusals are listed, not an error)."""
    stopped = stop_code(report)
    return int(ExitCode.OK) if stopped is None else stopped


# ---- summary and exit code -------------------------------------------------------------------
def _exit_code(report: RunReport) -> ExitCode:
    stopped = stop_code(report)
    if stopped is not None:
        return ExitCode(stopped)
    if report.counts.get("unknown", 0):
        return ExitCode.UNKNOWN_OUTCOME
    if report.counts.get("pending", 0):
        return ExitCode.GATEWAY
    if report.events.get("held", 0):  # likely duplicates held back: --allow-duplicate
        return ExitCode.HELD
    if report.counts.get("refused", 0):
        return ExitCode.DECLINED
    return ExitCode.OK
