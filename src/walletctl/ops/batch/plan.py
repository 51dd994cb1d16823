"""Pass 1 of a batch: read the whole input, validate every row, record the plan in the journal.

Nothing is sent in this pass. The plan is ONE journal transaction: when rows are invalid (and
``--skip-invalid`` is not given) it is rolled back, so a failed validation leaves no trace.
Only counts, per-currency totals and the first problems are kept in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from walletctl.errors import RequestValidationError
from walletctl.ops.batch.journal import FINAL_STATES, Journal
from walletctl.ops.batch.rows import InputFormat, Problem, Row, iter_rows

MAX_PROBLEMS_KEPT = 50


class BatchValidationError(RequestValidationError):
    """Invalid rows and no --skip-invalid: nothing was sent."""

    def __init__(self, problems: list[Problem], total: int, source: str) -> None:
        super().__init__([(f"line {p.line}: {p.field}", p.rule) for p in problems])
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (+{total - 3} more)" if total > 3 else ""
        self.message = (
            f"{total} invalid row{'s' if total != 1 else ''} in {source}: {shown}{more}; "
            "nothing was sent"
        )
        self.hint = "fix the rows, or pass --skip-invalid to send only the valid ones"
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

    def note(self, problem: Problem) -> None:
        self.invalid += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(problem)

    def money(self) -> str:
        """The rows to send in words: ``12.00 EUR, 3.50 USD`` (``nothing``)."""
        from walletctl.models.money import format_major

        return ", ".join(format_major(v, c) for c, v in sorted(self.totals.items())) or "nothing"


def plan_batch(
    source: Path,
    journal: Journal,
    *,
    fmt: InputFormat | None = None,
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
    plan = Plan()
    profile_rules: dict[str, str | None] = {}
    journal.begin()
    try:
        for item in iter_rows(source, fmt, default_currency=default_currency):
            if isinstance(item, Problem):
                plan.note(item)
                continue
            row: Row = item
            if row.profile is not None and check_profile is not None:
                if row.profile not in profile_rules:
                    profile_rules[row.profile] = check_profile(row.profile)
                rule = profile_rules[row.profile]
                if rule is not None:
                    plan.note(Problem(row.line, "profile", rule))
                    continue
            if check_request is not None and (problem := check_request(row)) is not None:
                plan.note(problem)
                continue
            planned = journal.plan(row)
            if isinstance(planned, Problem):
                plan.note(planned)
                continue
            plan.rows += 1
            if planned.state in FINAL_STATES:
                plan.done_before += 1
            else:
                plan.to_send += 1
                plan.totals[row.currency] = plan.totals.get(row.currency, Decimal(0)) + row.amount
        if plan.invalid and not skip_invalid:
            raise BatchValidationError(plan.problems, plan.invalid, display_name or str(source))
    except BaseException:
        journal.rollback()
        raise
    journal.commit()
    return plan
