"""``walletctl lookup --batch FILE``: balance reports on the batch engine's flow control.

Every reference is looked up concurrently, and one :class:`BalanceRow` comes out per
reference, in input order; a reference that cannot be answered is a row with an ``error``,
and the run goes on. A reference listed again is folded into its first line: looked up once,
counted once (``Report.duplicates``); the set of references seen is the one thing kept for
the whole run (about 100 bytes a distinct reference).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.errors import GatewayError, RefusedError
from walletctl.ops.batch.flow import (
    FlowControlled,
    FlowOptions,
    Lookup,
    LookupRefused,
    Retry,
    Stopped,
    StopReport,
)
from walletctl.ops.batch.input_rows import (
    TOO_LONG,
    BoundedLines,
    check_ref,
    csv_lines,
    csv_reader,
    json_lines,
)

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

ZERO = Decimal(0)
FOLDED_SHOWN = 5  # duplicate references named on stderr (all are counted in the summary)
AMOUNTS = ("authorised", "captured", "refunded", "reversed", "capturable", "refundable")
COLUMNS = ("line", "ref", "kind", "state", "currency", *AMOUNTS, "first_time", "last_time",
           "error")


@dataclass(slots=True)
class BalanceRow:
    line: int
    ref: str
    kind: str | None = None
    state: str | None = None
    currency: str | None = None
    amounts: dict[str, Decimal] = field(default_factory=dict)
    first: datetime | None = None
    last: datetime | None = None
    error: str | None = None
    records: list[TransactionRecord] | None = None  # what the lookup answered (None: no answer)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line, "ref": self.ref, "kind": self.kind,
                               "state": self.state, "currency": self.currency}
        for name in AMOUNTS:
            value = self.amounts.get(name)
            out[name] = None if value is None else f"{value:f}"
        out["first_time"] = self.first.isoformat() if self.first else None
        out["last_time"] = self.last.isoformat() if self.last else None
        out["error"] = self.error
        return out


def balance_row(line: int, ref: str, records: list[TransactionRecord]) -> BalanceRow:
    """One reference's balance from its lookup (the original and its follow-ups)."""
    from walletctl.models.ledger import balance_from_records
    from walletctl.models.money import exponent

    row = BalanceRow(line, ref, records=records)
    if not records:
        row.error = "unknown reference (the gateway has no transaction with it)"
        return row
    try:
        bal = balance_from_records(ref, records)
    except RefusedError as exc:
        row.error = exc.message
        return row
    row.kind, row.state, row.currency = bal.kind, bal.state, bal.currency
    try:
        unit = Decimal(1).scaleb(-exponent(bal.currency))
    except (KeyError, ValueError):
        unit = Decimal("0.01")
    row.amounts = {name: value.quantize(unit) for name, value in (
        ("authorised", bal.authorised), ("captured", bal.captured),
        ("refunded", bal.refunded), ("reversed", bal.authorised if bal.reversed else ZERO),
        ("capturable", bal.capturable), ("refundable", bal.refundable))}
    times = [t for t in (r.timestamp for r in records) if t is not None]
    if times:
        row.first, row.last = min(times), max(times)
    return row


@dataclass(frozen=True)
class Filters:
    open_only: bool = False  # approved pre-authorisations with capturable > 0
    older_than: timedelta | None = None  # first transaction older than this
    states: frozenset[str] = frozenset()  # lower-cased state names
    now: datetime | None = None

    def keep(self, row: BalanceRow) -> bool:
        if row.error is not None:  # errors are always reported, whatever the filters
            return True
        if self.open_only and not (row.kind == "preauth" and row.amounts["capturable"] > 0):
            return False
        if self.states and (row.state or "").lower() not in self.states:
            return False
        return self.older_than is None or not (
            row.first is None or self.now is None or row.first > self.now - self.older_than)


@dataclass
class Report(StopReport):
    references: int = 0
    shown: int = 0
    errors: int = 0
    totals: dict[str, dict[str, Decimal]] = field(default_factory=dict)  # currency -> sums
    counts: dict[str, int] = field(default_factory=dict)  # currency -> rows
    duplicates: int = 0  # lines repeating an earlier line's reference: looked up and counted once
    # the first few of them: (line, reference, the line it repeats), for a note on stderr
    folded: list[tuple[int, str, int]] = field(default_factory=list)

    def add(self, row: BalanceRow) -> None:
        self.shown += 1
        if row.error is not None:
            self.errors += 1
            return
        cur = row.currency or "?"
        sums = self.totals.setdefault(cur, dict.fromkeys(AMOUNTS, ZERO))
        for name in AMOUNTS:
            sums[name] += row.amounts[name]
        self.counts[cur] = self.counts.get(cur, 0) + 1


def iter_refs(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line, ref or None, problem) from CSV (a ``ref`` column, or one reference a line) or
    JSON Lines (objects with ``ref``). Streamed: one bounded line at a time (ops.batch.input_rows:
    an over-long line or field is a problem on its line, never held in memory)."""
    with path.open("rb") as fh:
        head = fh.read(512).lstrip(b"\xef\xbb\xbf \t\r\n")
    with path.open("rb") as raw:
        text = BoundedLines(raw, errors="replace")
        if head[:1] == b"{":
            for line, data, problem in json_lines(text):
                if problem == TOO_LONG:
                    yield line, None, problem
                else:
                    ref = data.get("ref") if isinstance(data, dict) else None
                    yield _checked(line, ref, "not a JSON object with a \"ref\" string")
            return
        column = 0
        for line, values, problem in csv_lines(text, csv_reader(text), stop_on_error=False):
            if values is None:
                yield line, None, problem
                continue
            if line == 1:
                names = [v.strip().lower() for v in values]
                if "ref" in names:
                    column = names.index("ref")
                    continue
            ref = values[column].strip() if column < len(values) else None
            yield _checked(line, ref, "has no ref value")


def _checked(line: int, ref: object, missing: str) -> tuple[int, str | None, str]:
    """(line, ref, "") or (line, None, "shown ref\0problem") for a ref that cannot be sent."""
    if not isinstance(ref, str) or not ref:
        return line, None, missing
    try:
        return line, check_ref(ref), ""
    except ValueError as exc:
        shown = ref[:64].encode("unicode_escape").decode("ascii")  # no control characters
        return line, None, f"{shown}\0ref: {exc}"


@dataclass(frozen=True)
class LookupOptions(FlowOptions):
    concurrency: int = 32


class BalanceReport(FlowControlled):
    """Runs the lookups; ``rows()`` yields every reference's row in input order."""

    report: Report
    opt: LookupOptions
    jitter = 0.0
    NOT_DONE = "not looked up"
    FAILURES = "consecutive failures"

    def __init__(self, client: Lookup, options: LookupOptions) -> None:
        super().__init__(options)
        self.client = client
        self.report = Report()

    async def rows(self, refs: Iterator[tuple[int, str | None, str]]) -> AsyncIterator[BalanceRow]:
        """Every reference's row, in input order (rows not looked up after a stop carry an
        error saying why). At most ``4 × concurrency`` rows are in flight or waiting for an
        earlier one, so memory stays flat in the number of references."""
        started = time.monotonic()
        slots = asyncio.Semaphore(self.opt.concurrency)
        window: deque[asyncio.Task[BalanceRow]] = deque()

        async def row(line: int, ref: str | None, problem: str) -> BalanceRow:
            if ref is None:
                shown, _, why = problem.rpartition("\0")
                return BalanceRow(line, shown, error=why)
            async with slots:
                return await self._one(line, ref)

        try:
            for item in self._folded(refs):
                window.append(asyncio.create_task(row(*item)))
                if len(window) >= 4 * self.opt.concurrency:
                    yield await window.popleft()
            while window:
                yield await window.popleft()
        finally:
            for task in window:
                task.cancel()
            self.report.breaker_open = self.breaker.open
            self.report.elapsed = time.monotonic() - started

    def _folded(self, refs: Iterator[tuple[int, str | None, str]],
                ) -> Iterator[tuple[int, str | None, str]]:
        """``refs`` without the references listed again (counted, the first few named)."""
        seen: dict[str, int] = {}  # reference -> its first line (kept for the whole run)
        for line, ref, problem in refs:
            first = line if ref is None else seen.setdefault(ref, line)
            if first != line:
                self.report.duplicates += 1
                if len(self.report.folded) < FOLDED_SHOWN:
                    self.report.folded.append((line, str(ref), first))
                continue
            self.report.references += 1
            yield line, ref, problem

    async def _one(self, line: int, ref: str) -> BalanceRow:
        try:
            return balance_row(line, ref, await self.lookup(self.client, ref))
        except LookupRefused as exc:
            if not isinstance(exc.error, GatewayError) or exc.error.status in (401, 403):
                self._fatal(exc.error)
            return BalanceRow(line, ref, error=exc.error.message)
        except Retry as exc:
            if exc.exhausted:
                self.breaker.failure(f"lookup {ref}: {exc.why}")
                return BalanceRow(line, ref, error=f"lookup kept failing: {exc.why}")
            why = self._halt_reason() if self.halted else "HTTP 429 kept coming"
            return BalanceRow(line, ref, error=why)
        except Stopped:
            return BalanceRow(line, ref, error=self._halt_reason())
