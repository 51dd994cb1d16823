"""The batch journal: one row per batch row keyed ``ref#occurrence`` (the n-th row naming
that original in the file), written BEFORE each send (docs/batch.md has its states); kept in
a file of its own beside the batch (:mod:`walletctl.history.batch_store`: SQLite in WAL mode,
durable against a killed process). No secrets: references, amounts, states and one-line
details only.

Pass 1 (:func:`plan_batch`) validates every row and records the plan in ONE transaction,
nothing sent, rolled back when rows are invalid (and ``--skip-invalid`` is not given).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Final, cast

from walletctl.errors import RequestValidationError, UsageError
from walletctl.history.batch_store import JournalFile
from walletctl.history.batch_store import JournalRow as JournalRow  # the batch's row type
from walletctl.history.batch_store import State as State
from walletctl.history.batch_store import read_journal as read_journal_file
from walletctl.models.operations import BATCH_TAG_OF
from walletctl.ops.batch.input_rows import Op, Problem, Row, iter_rows

FINAL_STATES: Final = frozenset({"confirmed", "refused"})
PREFLIGHT: Final = "pre-flight:"  # detail prefix of rows refused before anything was sent
# detail prefix of rows the gateway answered 404: nothing was stored (a wrong path prefix in
# base_url gives this too), so a later run checks them again
NOT_FOUND: Final = "gateway (HTTP 404, nothing stored; sent again by the next run):"
RECHECKED: Final = (PREFLIGHT, NOT_FOUND)
_PREFIX: Final = BATCH_TAG_OF
MAX_PROBLEMS_KEPT: Final = 50


def derive_reference(batch_id: str, op: Op, ref: str, occurrence: int) -> str:
    """The new clientSystemTransactionId: a pure function of batch id, row key and operation."""
    digest = hashlib.sha256(f"{batch_id}\0{op}\0{ref}\0{occurrence}".encode()).hexdigest()
    return f"{_PREFIX[op]}-{batch_id[:8]}-{digest[:16]}"


def default_batch_id(op: Op, source: Path | None, content_digest: str | None) -> str:
    """A file's batch id comes from its absolute path + op (editing the file keeps it);
    stdin's from its content + op (re-piping the same data resumes)."""
    basis = f"path:{source.resolve()}" if source is not None else f"content:{content_digest}"
    return hashlib.sha256(f"{op}\0{basis}".encode()).hexdigest()[:16]


def read_journal(path: Path) -> tuple[str, Op, list[JournalRow]]:
    """(batch id, operation, every row in line order) of a journal opened read-only (never
    locked: a running batch may hold it). Anything else is a usage error: exit 2."""
    meta, rows = read_journal_file(path)
    op = meta.get("op")
    if not meta.get("batch_id") or op not in _PREFIX:
        raise UsageError(f"--journal {path}: not a walletctl batch journal (no batch id "
                         "and operation in it)")
    return meta["batch_id"], cast("Op", op), rows


class Journal:
    """A batch's write-ahead journal (one file; a temporary copy for dry runs): what a row
    means and when it is written; :class:`~walletctl.history.batch_store.JournalFile`
    keeps it."""

    def __init__(self, path: Path, *, batch_id: str, op: Op, source: str) -> None:
        self.path = path
        self.batch_id = batch_id
        self.op = op
        self._file = JournalFile(path, batch_id=batch_id, op=op, source=source)
        self.existed = self._file.existed
        self.run = self._file.run

    # ---- planning (one transaction for the whole file) ----
    def begin(self) -> None:
        self._file.begin()

    def commit(self) -> None:
        self._file.commit()

    def rollback(self) -> None:
        self._file.rollback()

    def plan(self, row: Row) -> Problem | JournalRow:
        """Record ``row`` as planned (or match it to the same key of an earlier run)."""
        occ = self._file.occurrences(row.ref)
        key = f"{row.ref}#{occ}"
        new_ref = row.new_ref or derive_reference(self.batch_id, self.op, row.ref, occ)
        prev = self.get(key)
        if prev is not None and (problem := self._changed(prev, row, new_ref)) is not None:
            return problem
        if prev is None:
            if not self._file.add(key, ref=row.ref, occurrence=occ, line=row.line,
                                  new_ref=new_ref, amount=row.amount, currency=row.currency,
                                  profile=row.profile):
                return self._dup(row, new_ref)
            return JournalRow(key, row.line, row.ref, new_ref, row.amount, row.currency,
                              row.profile, "planned", 0, None, None, None)
        if not self._file.replan(key, line=row.line, new_ref=new_ref, amount=row.amount,
                                 currency=row.currency, profile=row.profile):
            return self._dup(row, new_ref)
        now = self.get(key)
        assert now is not None  # just written
        return now

    def _changed(self, prev: JournalRow, row: Row, new_ref: str) -> Problem | None:
        """An earlier run's row under the same key that the file now gives differently."""
        if prev.state == "refused" and (prev.detail or "").startswith(RECHECKED):
            # Refused by walletctl's own pre-flight or answered 404: nothing was stored, so a
            # new run checks it again (the original may have been approved since, or the
            # base_url fixed).
            self._file.reopen(prev.key)
            return None
        if prev.state == "planned" or (prev.amount, prev.currency, prev.new_ref) == (
                row.amount, row.currency, new_ref):
            return None
        return Problem(row.line, "amount" if prev.new_ref == new_ref else "new_ref",
                       f"differs from what the journal recorded for this row ({prev.state}: "
                       f"{prev.amount} {prev.currency} as {prev.new_ref}); "
                       "use a new --batch-id for a new batch")

    def _dup(self, row: Row, new_ref: str) -> Problem:
        other = self._file.holder_of(new_ref)
        where = f"line {other[0]}" if other and other[1] == self.run else "an earlier run"
        return Problem(row.line, "new_ref", f"{new_ref!r} is already used by {where}")

    # ---- running ----
    def rows(self, page: int = 500) -> Iterator[JournalRow]:
        """This run's rows in file order, read page by page (memory stays flat)."""
        return self._file.rows(page)

    def mark_sent_many(self, keys: list[str]) -> None:
        """Committed before the requests are sent, with any outcomes recorded since the last
        commit (one commit per group of sends: see runner.GroupCommit)."""
        self._file.mark_sent(keys)
        self._file.commit()

    def finish(self, key: str, state: State, *, txn_id: str | None = None,
               txn_state: str | None = None, detail: str | None = None) -> None:
        """Record an outcome. Group commit: it becomes durable with the next
        ``mark_sent_many`` or at the end of the run. Losing it to a crash is safe: the row
        is still ``sent`` on disk, and a resume reconciles it by lookup before anything is
        sent again."""
        self._file.settle(key, state, txn_id=txn_id, txn_state=txn_state, detail=detail)

    def get(self, key: str) -> JournalRow | None:
        return self._file.get(key)

    def counts(self) -> dict[str, int]:
        """This run's rows by state."""
        return self._file.counts()

    def close(self) -> None:
        self._file.close()


class BatchValidationError(RequestValidationError):
    """Invalid rows and no --skip-invalid, a file that cannot be read as a batch (whatever
    --skip-invalid says), a file of invalid rows only, or one with no rows: nothing was sent."""

    def __init__(self, problems: list[Problem], total: int, source: str, *,
                 skipping: bool = False) -> None:
        super().__init__([(f"line {p.line}: {p.field}", p.rule) for p in problems])
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (+{total - 3} more)" if total > 3 else ""
        whole = next((p for p in problems if p.whole_file), None)
        if whole is not None:
            self.message = f"{source} cannot be read as a batch: {whole}; nothing was sent"
            self.hint = ("fix the file (a header row naming the columns ref, amount and "
                         "optionally currency, new_ref, profile; UTF-8; commas)")
        elif not total:
            self.message = f"no rows in {source}: nothing was sent"
            self.hint = "a batch file holds a header row and one row per movement"
        else:
            self.message = (
                f"{total} invalid row{'s' if total != 1 else ''} in {source}: {shown}{more}; "
                "nothing was sent"
            )
            self.hint = ("fix the rows: --skip-invalid sends the valid ones, and this file has "
                         "none" if skipping else
                         "fix the rows, or pass --skip-invalid to send only the valid ones")
        self.args = (self.message,)
        self.total = total


@dataclass
class Plan:
    rows: int = 0  # valid rows of this run
    invalid: int = 0
    problems: list[Problem] = field(default_factory=list)
    to_send: int = 0  # valid rows not already final in the journal
    done_before: int = 0
    totals: dict[str, Decimal] = field(default_factory=dict)  # of to_send rows, per currency

    @property
    def fatal(self) -> bool:
        """A problem of the file itself (its header, its encoding) was found."""
        return any(p.whole_file for p in self.problems)

    def note(self, problem: Problem) -> None:
        self.invalid += 1
        if problem.whole_file:
            self.problems.insert(0, problem)  # named first, and kept whatever the count
            del self.problems[MAX_PROBLEMS_KEPT:]
        elif len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(problem)

    def add(self, row: JournalRow) -> None:
        self.rows += 1
        if row.state in FINAL_STATES:
            self.done_before += 1
        else:
            self.to_send += 1
            self.totals[row.currency] = self.totals.get(row.currency, Decimal(0)) + row.amount

    def money(self) -> str:
        """The rows to send in words: ``12.00 EUR, 3.50 USD`` (``nothing``)."""
        from walletctl.models.money import format_major

        return ", ".join(format_major(v, c) for c, v in sorted(self.totals.items())) or "nothing"


def plan_batch(
    source: Path,
    journal: Journal,
    *,
    default_currency: str | None = None,
    skip_invalid: bool = False,
    check_profile: Callable[[str], str | None] | None = None,
    display_name: str | None = None,
    check_request: Callable[[Row], Problem | None] | None = None,
) -> Plan:
    """Validate ``source`` and record its rows; raise :class:`BatchValidationError` on bad rows
    (unless ``skip_invalid``). ``check_profile(name)`` returns a rule text for an unusable name;
    ``check_request(row)`` builds the row's request with the request model (a row the model
    refuses is an invalid row here, never a failure in the middle of the run).
    """
    profile_rule = cache(check_profile) if check_profile is not None else None

    def problem_of(row: Row) -> Problem | None:
        if row.profile is not None and profile_rule is not None and \
                (rule := profile_rule(row.profile)) is not None:
            return Problem(row.line, "profile", rule)
        return None if check_request is None else check_request(row)

    plan = Plan()
    journal.begin()
    try:
        for item in iter_rows(source, default_currency=default_currency):
            planned = item if isinstance(item, Problem) else problem_of(item) or journal.plan(item)
            if isinstance(planned, Problem):
                plan.note(planned)
            else:
                plan.add(planned)
        # a file-level problem is fatal whatever --skip-invalid says; so is a file with no
        # valid row (skipping every row would send nothing and call that done)
        refused = bool(plan.invalid) and (not skip_invalid or not plan.rows or plan.fatal)
        if refused or not (plan.rows or plan.invalid):
            raise BatchValidationError(plan.problems, plan.invalid, display_name or str(source),
                                       skipping=skip_invalid)
    except BaseException:
        journal.rollback()
        raise
    journal.commit()
    return plan
