"""``capture|refund|reverse --batch``, from the parsed options to the run's result: the input
read, the journal opened, pass 1 (the plan), the desk's rules, four eyes, the confirmations,
pass 2 (:mod:`.driver`) or the dry run, the exit code. A journal this run created is removed
when the run stops before its first row is sent. The operator's side (prompts, notes,
progress) is the CLI's :class:`BatchDesk`.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, UsageError
from walletctl.history import open_for
from walletctl.history.policy import PolicyRefusal, amount_rule, check_batch_policy
from walletctl.models.inputs import clean_reason
from walletctl.models.operations import CONFIRMED
from walletctl.ops.batch.flow import check_flow_options, stop_code
from walletctl.ops.batch.input_rows import OPS, STDIN, batch_input
from walletctl.ops.batch.journal import FINAL_STATES, Journal, Plan, default_batch_id, plan_batch

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.driver import ResultsWriter, Watch
    from walletctl.ops.batch.input_rows import Op
    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.runner import RunOptions, RunReport

BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{4,64}$")


@dataclass(frozen=True)
class BatchAsk:
    """What the operator asked for (already parsed by the command)."""

    op: Op
    source: Path  # '-': stdin
    journal: Path | None = None
    resume: bool = False
    concurrency: int = 8
    rate: float | None = None
    results: Path | None = None
    skip_invalid: bool = False
    max_failures: int = 10
    batch_id: str | None = None
    dry_run: bool = False
    yes: bool = False
    full_preflight: bool = False
    offline: bool = False
    allow_duplicate: bool = False
    approval: int | None = None
    confirm_profile: tuple[str, ...] = ()
    reason: str | None = None
    confirm_amount: str | None = None


@dataclass(frozen=True)
class BatchDesk:
    """The command's conversation with the operator (the CLI passes its prompts and notes).

    ``profile``: the command's profile (refused at once when it is a production one with
    no terminal and no name given); ``load_profile``: a profile a row names;
    ``confirm_profiles(profiles, action, required)``: production profiles' names typed or
    given (True: typed at a prompt, which replaces the y/N); ``confirm_send(op, rows,
    money)``: a refund's or reversal's y/N (False: aborted); ``watch(profile, plan,
    predict)``: the run's progress and notes; ``warn``: a warning (an outcome the history
    could not record)."""

    profile: Callable[[], Profile]
    load_profile: Callable[[str], Profile]
    confirm_profiles: Callable[[Iterable[Profile], str, bool], bool]
    confirm_send: Callable[[str, int, str], bool]
    note: Callable[[str], None]
    watch: Callable[[Profile, Plan, bool], Watch]
    ask_amount: Callable[[str], str] | None = None
    warn: Callable[[str], None] | None = None


@dataclass(frozen=True)
class DryRow:
    """A dry run's row: its record (as ``--results`` has it) and the request it would send."""

    record: dict[str, Any]
    request: dict[str, Any]


@dataclass
class BatchResult:
    """What a batch did (or, a dry run, would do)."""

    op: Op
    batch_id: str
    journal: Path
    results: Path | None
    plan: Plan
    profile: Profile
    production: list[str] = field(default_factory=list)  # production profiles it used
    report: RunReport | None = None  # None: nothing was checked or sent
    code: int = int(ExitCode.OK)
    dry_run: bool = False
    dry_rows: Iterator[DryRow] = field(default_factory=lambda: iter(()))
    results_failed: str | None = None  # --results could not be written (why)
    aborted: bool = False  # the operator said no: nothing was sent


class _Aborted(Exception):
    """The operator answered no to the y/N: nothing was sent."""


class RowProfiles:
    """The profiles of a batch: the command's, and those its rows name (loaded once)."""

    def __init__(self, profile: Profile, load: Callable[[str], Profile]) -> None:
        self.profile = profile
        self._load = load
        self.loaded: dict[str, Profile] = {profile.name: profile}

    def __call__(self, name: str | None) -> Profile:
        key = name or self.profile.name
        if key not in self.loaded:
            self.loaded[key] = self._load(key)
        return self.loaded[key]

    def problem(self, name: str) -> str | None:
        """Why a row's ``profile`` cannot be used (None: it can)."""
        try:
            self(name)
        except ConfigError as exc:
            return exc.message
        return None

    def production(self) -> list[str]:
        return [p.name for p in self.loaded.values() if p.is_production]

    def strictest(self, amount_of: Callable[[Profile], Decimal | None],
                  ) -> dict[str | None, tuple[Decimal, str]]:
        """By a row's ``profile`` (None: the command's), the lowest amount ``amount_of``
        gives among the profiles whose desk rules judge the row (the command's and the
        row's own: the stricter applies), and whose it is; {} when none of them sets one."""
        found: dict[str | None, tuple[Decimal, str]] = {}
        for name in [None, *self.loaded]:
            own = self(name)
            judging = (self.profile,) if own is self.profile else (self.profile, own)
            hits = [(amount, p.name) for p in judging if (amount := amount_of(p)) is not None]
            if hits:
                found[name] = min(hits)
        return found


def profile_loader(config_path: Path | None, timeout: float | None) -> Callable[[str], Profile]:
    """A row's profile by name, from the profiles file, with the command line's --timeout."""

    def load(name: str) -> Profile:
        from walletctl.config.profiles_file import load_profile

        prof = load_profile(name, config_path)
        return prof if timeout is None else replace(prof, timeout=timeout)

    return load


# ---- the run -------------------------------------------------------------------------------
@contextmanager
def batch(ask: BatchAsk, desk: BatchDesk) -> Iterator[BatchResult]:
    """Plan, check, confirm and run (or dry-run) a batch; the result is valid inside."""
    _check(ask)
    reason = clean_reason(ask.reason)
    profile, load_profile = _under_rulebook(ask, desk)
    with ExitStack() as stack:
        job = _Job(ask, desk, RowProfiles(profile, load_profile), reason, stack)
        job.run()
        yield job.result


def _under_rulebook(ask: BatchAsk, desk: BatchDesk) -> tuple[Profile, Callable[[str], Profile]]:
    """The command's profile, and how a row's is loaded, under the desk's rulebook (kept in
    the history, read once per run; a dry run reads no history)."""
    profile = desk.profile()
    if ask.dry_run:
        return profile, desk.load_profile
    from walletctl.history.rulebook import read, under_rulebook

    with open_for(profile, purpose=f"walletctl {ask.op} --batch") as store:
        book = read(store)
    return under_rulebook(book, profile), lambda name: under_rulebook(
        book, desk.load_profile(name))


def _check(ask: BatchAsk) -> None:
    """The options, and the files a run writes, before anything is read or sent: a FIFO
    would block, a directory or /dev/full would fail after the money moved."""
    from walletctl.ops.user_files import check_output

    if ask.op not in OPS:
        raise UsageError(f"operation must be one of {', '.join(OPS)}")
    check_flow_options(ask.concurrency, ask.rate, ask.max_failures)
    if ask.batch_id is not None and not BATCH_ID.match(ask.batch_id):
        raise UsageError("--batch-id: must be 4-64 letters, digits, '-' or '_'")
    if ask.offline and not ask.dry_run:
        raise UsageError("--offline: only with --dry-run (a real run must reach the gateway)")
    check_output(ask.journal, "--journal", write=not ask.dry_run)
    check_output(ask.results, "--results")


class _Job:
    """One batch, from its input read and its journal opened to its result."""

    def __init__(self, ask: BatchAsk, desk: BatchDesk, profiles: RowProfiles,
                 reason: str | None, stack: ExitStack) -> None:
        self.ask, self.desk, self.profiles, self.reason = ask, desk, profiles, reason
        self.stack = stack
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="walletctl-")))
        self.path, self.display = batch_input(ask.source, scratch)
        digest = file_hash(self.path) if self.display == STDIN else None  # spooled stdin
        # four eyes bind the file's content: read it once for its hash, once to plan, and
        # refuse it if it changed in between
        self.bound = None if ask.dry_run else digest or file_hash(self.path)
        bid = ask.batch_id or default_batch_id(ask.op, None if digest else self.path, digest)
        journal_path = _journal_path(ask, bid)
        self.jr = _open_journal(ask, journal_path, bid, self.display, scratch)
        stack.callback(self.jr.close)
        self.result = BatchResult(op=ask.op, batch_id=bid, journal=journal_path,
                                  results=ask.results, plan=Plan(), profile=profiles.profile,
                                  dry_run=ask.dry_run)

    def run(self) -> None:
        ask, result = self.ask, self.result
        try:  # before the first row is sent: a journal this run created goes on failure
            approval, typed = self._prepare()
            if not ask.dry_run:
                self._confirm_send(typed)
                approval = self._approved(spend=True)
        except BaseException as exc:
            self._drop_new_journal()
            if not isinstance(exc, _Aborted):
                raise
            result.aborted, result.code = True, int(ExitCode.USAGE)
        result.production = self.profiles.production()
        if ask.dry_run:
            self._dry_run()
        elif not result.aborted:
            self._run(approval)

    def _prepare(self) -> tuple[int | None, bool]:
        """Pass 1 and every check before the confirmation: (the approval the batch runs under,
        whether a production profile's name was typed)."""
        from walletctl.ops.batch.runner import request_problem

        ask, profiles = self.ask, self.profiles
        self.result.plan = plan = plan_batch(
            self.path, self.jr, default_currency=profiles.profile.currency,
            skip_invalid=ask.skip_invalid, check_profile=profiles.problem,
            display_name=self.display,
            check_request=lambda row: request_problem(profiles(row.profile), ask.op, row))
        self._notes()
        approval = ask.approval
        if not ask.dry_run and plan.to_send:
            self._desk_rules(four_eyes=self._under_four_eyes())
            approval = self._approved(spend=False)
        # a production profile (the command's or a row's): its name typed, or given
        typed = self.desk.confirm_profiles(profiles.loaded.values(),
                                           f"{ask.op} {plan.to_send} row(s) ({plan.money()})",
                                           not ask.dry_run and plan.to_send > 0)
        return approval, typed

    def _notes(self) -> None:
        ask, jr, plan, note = self.ask, self.jr, self.result.plan, self.desk.note
        if ask.skip_invalid:
            for problem in plan.problems:
                note(f"skipped invalid {problem}")
            if plan.invalid > len(plan.problems):
                note(f"... {plan.invalid - len(plan.problems)} more invalid rows skipped")
        if jr.existed and not ask.dry_run and plan.done_before:
            note(f"resuming batch {jr.batch_id}: {plan.done_before} row(s) already done "
                 f"(journal {jr.path})")

    def _confirm_send(self, typed: bool) -> None:
        """A refund's or reversal's y/N (not when a production name was just typed)."""
        ask, plan = self.ask, self.result.plan
        if ask.op in CONFIRMED and plan.to_send and not ask.yes and not typed \
                and not self.desk.confirm_send(ask.op, plan.to_send, plan.money()):
            raise _Aborted

    # ---- the desk's rules ------------------------------------------------------------------
    def _desk_rules(self, *, four_eyes: bool) -> None:
        """``require_reason`` and the limits of every profile the rows to send use (under four
        eyes the approval replaces the limits, as for a single command); a refusal is recorded
        in the history as a single command's is."""
        ask, profile = self.ask, self.profiles.profile
        requiring = next((p.name for p in self._used()
                          if ask.op in p.history.require_reason), None)
        above, limits = ({}, {}) if four_eyes else self._above_limits()
        try:
            check_batch_policy(
                profile_name=requiring or profile.name, operation=ask.op,
                reason_required=requiring is not None, above=above, limits=limits,
                reason=self.reason, confirm_amount=ask.confirm_amount, ask=self.desk.ask_amount)
        except PolicyRefusal:
            from walletctl.history.recorder import recording

            # the refusal raised through the recorder: one history entry, ``refused``
            store = open_for(profile, purpose=f"walletctl {ask.op} --batch {self.jr.batch_id}")
            with recording(store, profile, ask.op, None, reason=self.reason,
                           batch_id=self.jr.batch_id, warn=self.desk.warn):
                raise

    def _used(self) -> list[Profile]:
        """The command's profile, then those the rows to send name."""
        profiles = self.profiles
        names = {row.profile for row in self.jr.rows() if row.state not in FINAL_STATES}
        names -= {None, profiles.profile.name}
        return [profiles.profile, *(profiles(name) for name in sorted(n for n in names if n))]

    def _approval_amounts(self) -> dict[str | None, tuple[Decimal, str]]:
        from walletctl.ops.money.approval import threshold

        return self.profiles.strictest(lambda prof: threshold(prof, self.ask.op))

    def _under_four_eyes(self) -> bool:
        """The batch runs under an approval: one given, or one it files (a row above the
        approval amount of the command's profile or of its own)."""
        if self.bound is None:
            return False
        if self.ask.approval is not None:
            return True
        amounts = self._approval_amounts()
        return bool(amounts) and any(
            (found := amounts.get(row.profile)) is not None and row.amount > found[0]
            for row in self.jr.rows())

    def _above_limits(self) -> tuple[dict[str, tuple[int, Decimal]], dict[str, str]]:
        """The file's rows above their limit (the command's profile's or their own, the
        lower): per currency (rows, total), and the limits that apply. Every row of the file
        counts, so a resumed run asks for the same total as the first."""
        above: dict[str, tuple[int, Decimal]] = {}
        limits: dict[str, str] = {}
        # any currency's lowest limit: the stricter
        strictest = self.profiles.strictest(
            lambda prof: amount_rule(prof.history.limits, self.ask.op, None))
        for row in self.jr.rows() if strictest else ():
            found = strictest.get(row.profile)
            if found is None or row.amount <= found[0]:
                continue
            rows, total = above.get(row.currency, (0, Decimal(0)))
            above[row.currency] = (rows + 1, total + row.amount)
            limit, name = found
            limits[name] = f"{limit:f}"
        return above, limits

    # ---- four eyes -------------------------------------------------------------------------
    def _approved(self, *, spend: bool) -> int | None:
        """File the batch for approval (exit 12), or check the one given and (``spend``, once
        every confirmation is given) spend it; None: none needed. A row needs one above the
        approval amount of the command's profile or of its own (the lower). Refused if the
        file changed while it was planned."""
        ask, plan, bound = self.ask, self.result.plan, self.bound
        if bound is None or not plan.to_send:
            return ask.approval
        amounts = self._approval_amounts()
        lowest = min((amount for amount, _whose in amounts.values()), default=None)
        if ask.approval is None and lowest is None:
            return None
        from walletctl.ops.money.approval import batch_request, gate_batch

        if self.display != STDIN and file_hash(self.path) != bound:
            raise UsageError(f"--batch {self.display}: the file changed while it was read; "
                             "run again")
        profile, batch_id = self.profiles.profile, self.jr.batch_id
        request = batch_request(
            profile, ask.op, self.jr.rows(), file=self.display, sha256=bound, rows=plan.to_send,
            totals=plan.money(), reason=self.reason,
            amount_of=lambda row: None if (hit := amounts.get(row.profile)) is None else hit[0])
        store = open_for(profile, purpose=f"walletctl {ask.op} --batch {batch_id}")
        try:
            return gate_batch(store, profile, request, ask.approval, batch_id=batch_id,
                              limit=lowest, spend=spend)
        finally:
            store.close()

    def _drop_new_journal(self) -> None:
        """Nothing was sent: a journal this run created (holding only the plan) is removed."""
        jr = self.jr
        if jr.existed or self.ask.dry_run:
            return
        jr.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(jr.path) + suffix).unlink(missing_ok=True)

    # ---- pass 2 ----------------------------------------------------------------------------
    def _options(self) -> RunOptions:
        from walletctl.ops.batch.runner import RunOptions

        ask = self.ask
        return RunOptions(op=ask.op, concurrency=ask.concurrency, rate=ask.rate,
                          max_failures=ask.max_failures, direct=not ask.full_preflight,
                          predict=ask.dry_run, allow_duplicate=ask.allow_duplicate)

    def _run(self, approval: int | None) -> None:
        from walletctl.ops.batch.driver import audit_for, drive

        result, profiles = self.result, self.profiles
        writer = self._results_writer()
        options = self._options()
        audit = audit_for(profiles.profile, options, self.jr.batch_id, profiles,
                          approval=approval, reason=self.reason)
        report = drive(self.jr, result.plan, options, profile_for=profiles,
                       watch=self.desk.watch(profiles.profile, result.plan, False),
                       writer=writer, audit=audit)
        result.report = report
        result.code = int(exit_code(report, skipped=result.plan.invalid))
        if writer is not None:
            writer.close()
            result.results_failed = writer.failed
            if writer.failed is not None and result.code == ExitCode.OK:
                result.code = int(ExitCode.USAGE)  # the run is done, the file asked for is not

    def _results_writer(self) -> ResultsWriter | None:
        path = self.ask.results
        if path is None:
            return None
        from walletctl.ops.batch.driver import ResultsWriter

        try:
            writer = ResultsWriter(path)
        except OSError as exc:
            raise UsageError(f"--results {path}: cannot write ({exc.strerror})") from None
        self.stack.callback(writer.close)
        return writer

    # ---- dry run ---------------------------------------------------------------------------
    def _dry_run(self) -> None:
        """Checked (the default): the real run's read-only pre-flight; it exits as the real run
        would stop (9/7 when the gateway refuses the credentials or cannot be reached, 6 when
        lookups kept failing, else 0: predicted refusals are listed, not an error)."""
        from walletctl.ops.batch.driver import drive

        result = self.result
        if not self.ask.offline and result.plan.to_send:
            result.report = drive(self.jr, result.plan, self._options(),
                                  profile_for=self.profiles,
                                  watch=self.desk.watch(self.profiles.profile, result.plan, True))
            result.code = stop_code(result.report) or int(ExitCode.OK)
        result.dry_rows = self._dry_rows(result.report)

    def _dry_rows(self, report: RunReport | None) -> Iterator[DryRow]:
        """Each row as the real run would send it: its body built with the row's own profile
        (``profile`` column), as the runner does; written to --results as it is read."""
        from walletctl.ops.batch.runner import build_request

        op = self.ask.op
        writer = self._results_writer()
        try:
            for row in self.jr.rows():
                status = dry_status(row, report is not None)
                prof = self.profiles(row.profile)
                body = build_request(prof, op, row).to_wire(prof.amount_format)
                record: dict[str, Any] = {
                    "line": row.line, "op": op, "ref": row.ref, "new_ref": row.new_ref,
                    "amount": f"{row.amount:f}", "currency": row.currency, "status": status}
                if status in ("would-refuse", "unchecked"):
                    # an unchecked row's journal detail is an earlier run's: this run's reason
                    record["reason"] = row.detail if status == "would-refuse" else (
                        f"not checked: {report.fatal}" if report is not None and report.fatal
                        else "not checked: the lookup of its original got no answer")
                if writer is not None:
                    writer.write(record)
                yield DryRow(record, body)
        finally:
            if writer is not None:
                writer.close()


# ---- input and journal ---------------------------------------------------------------------
def file_hash(path: Path) -> str:
    """sha256 of the batch file."""
    found = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 16):
                found.update(chunk)
    except OSError as exc:
        raise UsageError(f"--batch {path}: cannot read ({exc.strerror})") from None
    return found.hexdigest()


def _journal_path(ask: BatchAsk, batch_id: str) -> Path:
    """--journal, or beside the input (``orders.csv`` -> ``orders.csv.capture.journal``;
    stdin: in the current directory)."""
    from walletctl.ops.user_files import check_output

    path = ask.journal
    if path is None:
        path = (Path.cwd() / f"walletctl-{ask.op}-{batch_id}.journal" if str(ask.source) == "-"
                else ask.source.with_name(f"{ask.source.name}.{ask.op}.journal"))
    if ask.resume and not path.exists():
        raise UsageError(f"--resume: no journal at {path}",
                         hint="pass --journal PATH (and --batch-id) of the run to resume")
    if ask.journal is None:
        check_output(path, "--journal", write=not ask.dry_run)
    return path


def _open_journal(ask: BatchAsk, path: Path, batch_id: str, display: str,
                  scratch: Path) -> Journal:
    """The journal; a dry run plans into a copy (the real journal is never touched)."""
    if ask.dry_run:
        real, path = path, scratch / "dry-run.journal"
        if real.exists():
            from walletctl.history.batch_store import copy_journal

            copy_journal(real, path)
    try:
        return Journal(path, batch_id=batch_id, op=ask.op, source=display)
    except OSError as exc:
        raise UsageError(f"--journal {path}: cannot open ({exc.strerror})") from None


def exit_code(report: RunReport, *, skipped: int = 0) -> ExitCode:
    """A real run's exit code: how it stopped, else its worst row, else VALIDATION when
    ``skipped`` invalid rows of the input were left out (0 means every row was confirmed)."""
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
    if skipped:
        return ExitCode.VALIDATION
    return ExitCode.OK


def dry_status(row: JournalRow, checked: bool) -> str:
    """done-earlier | would-send | would-refuse | unchecked (the lookup did not answer)."""
    if row.state == "refused" and row.attempts == 0:  # refused by this check, never sent
        return "would-refuse"
    if row.state in FINAL_STATES:
        return "done-earlier"
    if not checked or row.detail == "would-send":
        return "would-send"
    return "unchecked"
