"""Pass 2 of a batch: the async runner, exactly-once follow-ups on one connection pool.

A row runs the money protocol's steps in the single command's order (``ops.money.steps``,
:class:`RowSteps`; ``models.outcome``); the batch's own work is scheduling (rows on one
original one after another, others concurrently), retries and group commit, inside those
steps. A row is re-sent only after a lookup proved its reference absent,
and always with the same reference. The runner is the one writer of a row's two records: the
journal's ``sent`` and the history's entry of every row leaving in one event-loop turn are
committed together before the requests leave (:class:`GroupCommit`), and an outcome goes to
both from ``_finish``. Row by row, the behaviour is docs/batch.md's.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from walletctl.client.gateway import FollowUpCall
from walletctl.constants import APM_PROVIDER
from walletctl.errors import (
    GatewayError,
    NetworkError,
    NotConnectedError,
    RedirectError,
    RefusedError,
    ResponseError,
    UnknownOutcomeError,
    WalletctlError,
)
from walletctl.history.recorder import Recording, intent_for, os_user
from walletctl.history.store import Completion, Intent
from walletctl.models.base import dumps
from walletctl.models.ledger import balance_from_records, check_followup
from walletctl.models.money import to_wire
from walletctl.models.outcome import (
    Intended,
    conflict_note,
    exit_of,
    history_outcome,
    outcome_of_error,
    outcome_of_row,
    row_state,
)
from walletctl.ops.batch.flow import (
    FlowControlled,
    FlowOptions,
    Lookup,
    LookupRefused,
    Retry,
    Stopped,
    StopReport,
    Tries,
)
from walletctl.ops.batch.input_rows import Op, Problem, Row
from walletctl.ops.batch.journal import (
    FINAL_STATES,
    NOT_FOUND,
    PREFLIGHT,
    Journal,
    JournalRow,
    State,
)
from walletctl.ops.money.duplicates import likely_duplicate
from walletctl.ops.money.earlier import needs_lookup, resolve_earlier, verdict_of
from walletctl.ops.money.lock import DeskLocks, MoneyLocks, hold_row, lock_key, money_locks
from walletctl.ops.money.steps import AGAIN, Finished, run_async

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore
    from walletctl.models.followup import FollowUpRequest, FollowUpResponse
    from walletctl.models.records import TransactionRecord

_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class RunOptions(FlowOptions):
    op: Op
    # After a timeout/drop, wait this long before trusting "absent" (a slow gateway may still
    # be committing the first request). 5xx answers need no settling: the gateway is done.
    settle: float = 0.5
    direct: bool = True  # one round trip for rows that need no lookup (see _direct)
    predict: bool = False  # dry run: lookups and pre-flight only, nothing sent
    allow_duplicate: bool = False  # send rows held as likely duplicates


@dataclass
class RowResult:
    line: int
    ref: str
    new_ref: str
    op: Op
    amount: Decimal
    currency: str
    status: str  # confirmed | refused | unknown | pending
    txn_id: str | None = None
    txn_state: str | None = None
    detail: str | None = None
    attempts: int = 0
    earlier_run: bool = False
    profile: str | None = None  # the row's profile column (None: the command's)

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.line, "op": self.op, "ref": self.ref, "new_ref": self.new_ref,
            "amount": f"{self.amount:f}", "currency": self.currency, "status": self.status,
            "transaction_id": self.txn_id, "state": self.txn_state, "attempts": self.attempts,
            "earlier_run": self.earlier_run, "detail": self.detail,
        }


@dataclass
class RunReport(StopReport):
    counts: dict[str, int] = field(
        default_factory=lambda: {"confirmed": 0, "refused": 0, "unknown": 0, "pending": 0})
    confirmed_totals: dict[str, Decimal] = field(default_factory=dict)
    earlier: int = 0  # rows finished by an earlier run
    sent_rows: int = 0  # rows whose request left in this run (the rate counts these only)
    breaker_reason: str | None = None
    breaker_threshold: int = 0
    # What happened on the way (for the summary and the fault tests): throttled, gateway_5xx,
    # network, no_answer, found_on_lookup (an unclear send that had been applied),
    # absent_on_lookup (an unclear send proven not applied, then re-sent).
    events: dict[str, int] = field(default_factory=dict)

    def note(self, event: str) -> None:
        self.events[event] = self.events.get(event, 0) + 1

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


_FIELD_OF = {"clientSystemInvoiceId": "ref", "clientSystemTransactionId": "new_ref",
             "amount": "amount", "currencyCode": "currency"}


def request_problem(profile: Profile, op: Op, row: Row) -> Problem | None:
    """Build ``row``'s request with the request model (with a stand-in for a derived new
    reference); a refusal becomes the row's problem, named by the batch column."""
    stand_in = JournalRow("", row.line, row.ref, row.new_ref or "cap-00000000-0", row.amount,
                          row.currency, row.profile, "planned", 0, None, None, None)
    try:
        build_request(profile, op, stand_in)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(x) for x in first.get("loc", ())]
        wire = loc[0] if loc else ""
        msg = str(first.get("msg", "is invalid")).removeprefix("Value error, ")
        if not loc and ":" in msg:  # model-level rule: "amount: ..." / "clientSystem...: ..."
            wire, msg = (part.strip() for part in msg.split(":", 1))
        return Problem(row.line, _FIELD_OF.get(wire, wire or "(row)"), msg)
    return None


def build_request(profile: Profile, op: Op, row: JournalRow) -> FollowUpRequest:
    """The spec 2.3 request for one row (also what --dry-run prints)."""
    from walletctl.models.followup import OPERATION_TYPES, ApmRequestDetails, FollowUpRequest

    return FollowUpRequest(
        merchant_id=profile.merchant_id, store_id=profile.store_id, user_id=profile.user_id,
        type=OPERATION_TYPES[op], amount=row.amount, currency_code=row.currency,
        client_system_transaction_id=row.new_ref, client_system_invoice_id=row.ref,
        apm_details=ApmRequestDetails(apm_provider=APM_PROVIDER))


class RequestTemplate:
    """A profile's follow-up body for one operation, the row's fields filled in: the bytes
    :func:`build_request` would send (tests/batch check it), without a model per row again
    (every row passed ``build_request`` when planned; a second time cost a tenth of its CPU)."""

    def __init__(self, profile: Profile, op: Op) -> None:
        from walletctl.models.followup import OPERATION_TYPES

        self.op = op
        self.type = OPERATION_TYPES[op]
        self.fmt = profile.amount_format
        head = {"merchantId": profile.merchant_id, "storeId": profile.store_id,
                "userId": profile.user_id, "type": self.type}
        self._head = dumps(head)[:-1] + ',"amount":'
        self._tail = ',"apmDetails":' + dumps({"apmProvider": APM_PROVIDER}) + "}"

    def call(self, row: JournalRow) -> FollowUpCall:
        text = json.dumps  # JSON string literals, escaped as the model's encoder does
        amount = to_wire(row.amount, row.currency, self.fmt)
        body = (f'{self._head}{text(amount)},"currencyCode":{text(row.currency)},'
                f'"clientSystemTransactionId":{text(row.new_ref)},'
                f'"clientSystemInvoiceId":{text(row.ref)}{self._tail}')
        return FollowUpCall(body.encode(), row.new_ref, row.ref, row.amount, row.currency,
                          self.type, self.op)


class Gateway(Lookup, Protocol):
    """What the runner needs of :class:`walletctl.client.gateway.AsyncGatewayClient`."""

    profile: Profile

    async def followup_call(self, call: FollowUpCall) -> FollowUpResponse: ...


class _Refused(Exception):
    """The gateway refused a lookup for this row (e.g. HTTP 400): the row is refused."""


class _GaveUp(Exception):
    """A lookup kept failing: this row's outcome stays as journaled (unknown or not sent)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class GroupCommit(Generic[_T]):
    """``await commit(item)`` returns once ``write([..., item, ...])`` has returned.

    ``max_wait``: a long turn (many answers arriving together at high concurrency) would
    hold its first rows back until its end; once a group's first row has waited this long,
    the group is written at once, by the row that noticed. A row's request then leaves at
    most about ``max_wait`` later than it would unbatched.
    """

    def __init__(self, write: Callable[[list[_T]], None], *, max_wait: float = 0.001,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._write = write
        self._max_wait = max_wait
        self._clock = clock
        self._pending: list[_T] = []
        self._done: asyncio.Future[None] | None = None
        self._opened = 0.0  # when the pending group's first row added itself

    async def __call__(self, item: _T) -> None:
        self._pending.append(item)
        done = self._done
        if done is None:
            loop = asyncio.get_running_loop()
            done = self._done = loop.create_future()
            self._opened = self._clock()
            loop.call_soon(self._flush)
        elif self._clock() - self._opened >= self._max_wait:
            self._flush()  # this turn is long: write the group now, this row included
        # shield: one waiter cancelled (Ctrl-C twice) must not cancel the others' write
        await asyncio.shield(done)

    def _flush(self) -> None:
        done, self._done = self._done, None
        if done is None:  # already written by a row that found the group waiting too long
            return
        items, self._pending = self._pending, []
        try:
            self._write(items)
        except Exception as exc:
            done.set_exception(exc)
            done.exception()  # retrieved here too: no "never retrieved" noise if all left
        else:
            done.set_result(None)


class BatchRunner(FlowControlled):
    report: RunReport
    opt: RunOptions
    _since: str | None = None

    def __init__(self, journal: Journal, gateway_for: Callable[[str | None], Gateway],
                 options: RunOptions, *, on_result: Callable[[RowResult], None] | None = None,
                 audit: BatchAudit | None = None) -> None:
        super().__init__(options)
        self.journal = journal
        # The history's half of the row's record (None: off, or a dry run); earlier intents
        # and the duplicate hold look in its store, as the single command's do.
        self.audit = audit
        self.history: HistoryStore | None = None if audit is None else audit.store
        self._money_locks: MoneyLocks | None = None
        self._desk: DeskLocks | None = None
        self._desk_ready = False
        self.gateway_for = gateway_for
        self.on_result = on_result
        self._commit_sent = GroupCommit(self._write_sent)
        self.report = RunReport(breaker_threshold=options.max_failures)
        self._locks: dict[str, list[Any]] = {}  # ref -> [Lock, users]
        # Rows left 'unknown' this run, per original: counted as applied by later pre-flights.
        self._unknown: dict[str, list[tuple[Decimal, str]]] = {}
        self._attempts: dict[str, int] = {}  # rows in flight only (popped when reported)
        self._templates: dict[str, RequestTemplate] = {}  # per profile name
        # original -> whether the history holds something on it, asked together with the
        # row's desk lock (a shared history: see ops.money.lock.DeskLocks); used once
        self._probed: dict[str, bool] = {}

    async def run(self) -> RunReport:
        started = time.monotonic()
        queue: asyncio.Queue[JournalRow | None] = asyncio.Queue(maxsize=self.opt.concurrency * 2)

        async def produce() -> None:
            for row in self.journal.rows():
                await queue.put(row)
            for _ in range(self.opt.concurrency):
                await queue.put(None)

        async def work() -> None:
            while (row := await queue.get()) is not None:
                await self._process(row)

        try:
            await asyncio.gather(produce(), *(work() for _ in range(self.opt.concurrency)))
        finally:
            if self._desk is not None:
                self._desk.close()
            self.journal.commit()
            self.report.breaker_open = self.breaker.open
            self.report.breaker_reason = self.breaker.last_failure
            self.report.elapsed = time.monotonic() - started
        return self.report

    # ---- one row -------------------------------------------------------------------------
    async def _process(self, row: JournalRow) -> None:
        if row.state in FINAL_STATES:
            self._emit(row, row.state, earlier=True)
            return
        if self._not_started(row):
            return
        entry = self._locks.setdefault(row.ref, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                await self._process_locked(row)
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[row.ref]

    def _not_started(self, row: JournalRow) -> bool:
        """The run halted before this row: reported as left (a row left sent/unknown by an
        earlier run may have been applied)."""
        if self.halted:
            self._left(row, self._halt_reason(), journaled=False)
        return self.halted

    def _left(self, row: JournalRow, why: str, not_sent: str | None = None, *,
              journaled: bool = True) -> None:
        """A row the run leaves: unknown if it may have reached the gateway (its state in
        the journal now; ``journaled``: recorded so), else pending (``not_sent``: why)."""
        state = (self.journal.get(row.key) or row).state if journaled else row.state
        if state not in ("sent", "unknown"):
            self._emit(row, "pending", detail=not_sent or why)
        elif journaled:
            self._finish(row, "unknown", detail=why)
        else:
            self._emit(row, "unknown", detail=why)

    async def _process_locked(self, row: JournalRow) -> None:
        if self._not_started(row):
            return
        steps = RowSteps(self, self.gateway_for(row.profile), row)
        await run_async(steps, dry_run=self.opt.predict)

    def _desk_locks(self, client: Gateway) -> DeskLocks | None:
        """The desk's locks when the history is shared (made once per run); each group of
        rows that gets its locks is probed in the history at once (see ``_concerns``)."""
        if not self._desk_ready:
            self._desk_ready = True
            shared = self.history.shared_locks() if self.history is not None else None
            if shared is not None and self.history is not None:
                history = self.history
                since = self._window_start(client)
                self._desk = DeskLocks(shared, probe=lambda refs: history.touched_many(
                    operation=self.opt.op, original_refs=refs,
                    batch_id=self.journal.batch_id, since=since))
                self._probed = self._desk.touched
        return self._desk

    def _direct(self, row: JournalRow) -> bool:
        """One round trip (docs/batch.md, "One round trip, or two"): the only row on its
        original (key ``ref#0``, no ``ref#1``), never sent, no journal detail."""
        return (self.opt.direct and not self.opt.predict and row.state == "planned"
                and row.attempts == 0 and row.detail is None and row.key == f"{row.ref}#0"
                and self.journal.get(f"{row.ref}#1") is None)

    def _predicted(self, row: JournalRow) -> None:
        """Dry run: the row passed the pre-flight; later rows on its original see it applied."""
        self.journal.finish(row.key, "planned", detail="would-send")
        if row.key != f"{row.ref}#0" or self.journal.get(f"{row.ref}#1") is not None:
            self._unknown.setdefault(row.ref, []).append((row.amount, row.new_ref))
        self._emit(row, "pending", detail="would-send")

    # ---- follow-ups ----------------------------------------------------------------------
    def _write_sent(self, items: list[tuple[JournalRow, int]]) -> None:
        """The rows about to leave: 'sent' in the journal, then their history entries begun
        (one group write each, before any of the requests leaves)."""
        self.journal.mark_sent_many([row.key for row, _ in items])
        self.report.sent_rows += sum(1 for _, attempt in items if attempt == 1)
        if self.audit is not None:
            self.audit.on_send(items)

    async def _settle(self, client: Gateway, row: JournalRow,
                      answer: FollowUpResponse | WalletctlError) -> None:
        """What the answer to a row's request (or the failure in its place) proves, journaled
        and reported (models.outcome, as for the single command); raises :class:`Retry` when
        the request is to leave again (proven not applied, or never sent), :class:`Stopped`
        when the run stops."""
        if isinstance(answer, NotConnectedError):  # the connection was never made: not sent
            self.journal.finish(row.key, "planned", detail=answer.message)
            self._connect_failed(answer, row.key)
            raise Retry(answer.message)
        if isinstance(answer, RedirectError):
            # Not followed, and the same for every row: stop. Left 'unknown' (a redirect
            # should mean nothing was processed; the next run's lookup makes sure).
            self._heard()
            self.journal.finish(row.key, "unknown", detail=answer.message)
            self._fatal(answer)
            raise Stopped
        if isinstance(answer, UnknownOutcomeError | ResponseError | NetworkError):
            self.report.note("no_answer")
            self.journal.finish(row.key, "unknown", detail=answer.message)
            await self._reconcile(client, row, settle=True, why=answer.message)
            return
        if isinstance(answer, GatewayError):
            self._heard()
            self._note_status(answer.status)
            if answer.status in (401, 403):
                self.breaker.success()
                self.journal.finish(row.key, "planned", detail=answer.message)
                self._fatal(answer)
                raise Stopped
            if row_state(outcome_of_error(answer)) == "refused":  # a documented 4xx: none stored
                self.breaker.success()
                if answer.status == 404:  # the next run sends it again
                    self._finish(row, "refused", detail=f"{NOT_FOUND} {answer.message}")
                else:
                    self._finish(row, "refused", detail=f"gateway: {answer.message}")
                return
            # 429, 5xx, 409, ...: the request may have been read: unknown until looked up
            self.journal.finish(row.key, "unknown", detail=answer.message)
            throttled = answer.status == 429
            ra = answer.retry_after if throttled else None
            if throttled:
                self.throttled(ra, self.opt.backoff_initial, answer.retry_after_asked)
            elif answer.status < 500:
                self.breaker.success()
            await self._reconcile(client, row, settle=answer.status < 500, why=answer.message,
                                  throttled=throttled, retry_after=ra)
            return
        assert not isinstance(answer, WalletctlError)
        self._heard()
        self.breaker.success()
        self._by_state(row, answer.state, answer.id)

    async def _reconcile(self, client: Gateway, row: JournalRow, *, settle: bool, why: str,
                         throttled: bool = False, retry_after: float | None = None) -> None:
        """The outcome is unclear: look the new reference up. Found: journaled; absent:
        :class:`Retry`."""
        found = self._record_if_found(row, await self._lookup(client, row.new_ref))
        if not found and settle and self.opt.settle > 0:
            await asyncio.sleep(self.opt.settle)
            found = self._record_if_found(row, await self._lookup(client, row.new_ref))
        if found:
            self.report.note("found_on_lookup")
            return
        self.report.note("absent_on_lookup")
        # Proven absent: the row was never applied. Back to planned, send again (same ref).
        self.journal.finish(row.key, "planned", detail=f"absent after: {why}")
        raise Retry(f"{why} (lookup: absent)", retry_after=retry_after, throttled=throttled)

    def _template(self, profile: Profile) -> RequestTemplate:
        found = self._templates.get(profile.name)
        if found is None:
            found = self._templates[profile.name] = RequestTemplate(profile, self.opt.op)
        return found

    # ---- results -------------------------------------------------------------------------
    def _finish(self, row: JournalRow, state: State, *, txn_id: str | None = None,
                txn_state: str | None = None, detail: str | None = None) -> None:
        self.journal.finish(row.key, state, txn_id=txn_id, txn_state=txn_state, detail=detail)
        if state == "unknown":
            self._unknown.setdefault(row.ref, []).append((row.amount, row.new_ref))
        self._emit(row, state, txn_id=txn_id, txn_state=txn_state, detail=detail)

    def _emit(self, row: JournalRow, status: str, *, txn_id: str | None = None,
              txn_state: str | None = None, detail: str | None = None,
              earlier: bool = False) -> None:
        if earlier:
            txn_id, txn_state, detail = row.txn_id, row.txn_state, row.detail
            self.report.earlier += 1
        self.report.counts[status] = self.report.counts.get(status, 0) + 1
        if status == "confirmed":
            totals = self.report.confirmed_totals
            totals[row.currency] = totals.get(row.currency, Decimal(0)) + row.amount
        attempts = self._attempts.pop(row.key, row.attempts)
        result = RowResult(row.line, row.ref, row.new_ref, self.opt.op, row.amount,
                           row.currency, status, txn_id, txn_state, detail, attempts, earlier,
                           row.profile)
        if self.audit is not None:  # the history's half of the outcome _finish journaled
            self.audit.on_result(result)
        if self.on_result is not None:
            self.on_result(result)

    # ---- the money protocol's steps (ops.money, models.outcome) -------------------------
    def _concerns(self, client: Gateway, row: JournalRow) -> bool:
        """The history holds something on this original from outside the batch (an unknown
        intent, or a recent movement): the row takes the lookup path."""
        if self.history is None:
            return False
        probed = self._probed.pop(row.ref, None)  # asked with the row's desk lock
        if probed is not None:
            return probed
        return needs_lookup(self.history, row.ref, self.opt.op,
                            batch_id=self.journal.batch_id, since=self._window_start(client))

    def _window_start(self, client: Gateway) -> str:
        if self._since is None:  # the window's start, once per run (a few minutes' drift
            window = client.profile.history.duplicate_window  # over a long run only widens)
            start = datetime.now(UTC) - timedelta(minutes=window)
            self._since = start.strftime("%Y-%m-%dT%H:%M:%S")
        return self._since

    def _resolve_earlier(self, client: Gateway, row: JournalRow,
                         records: Sequence[TransactionRecord]) -> None:
        """Resolve unknown intents on the original from outside this batch (the single
        command's step, with the row's lookup): recorded in the history; a conflict among
        them is recorded (not applied under its reference) and named on the report."""
        if self.history is None:
            return
        judged = resolve_earlier(self.history, client.profile, self.opt.op, row.ref,
                                 list(records), batch_id=self.journal.batch_id)
        for j in judged:
            if j.verdict == "conflict":
                self.report.note("conflict")

    def _held(self, client: Gateway, row: JournalRow,
              records: Sequence[TransactionRecord]) -> bool:
        """The likely-duplicate hold, against movements made outside this batch."""
        ours = {row.new_ref}
        occ = 0
        while (other := self.journal.get(f"{row.ref}#{occ}")) is not None:
            ours.add(other.new_ref)
            occ += 1
        now = datetime.now(UTC)
        dup = likely_duplicate(self.history, client.profile, operation=self.opt.op,
                               original_ref=row.ref, amount=row.amount, currency=row.currency,
                               records=records, now=now, itself=frozenset(ours),
                               batch_id=self.journal.batch_id)
        if dup is None:
            return False
        self.report.note("held")
        self._finish(row, "refused", detail=f"{PREFLIGHT} held: {dup.error(now).message}")
        return True

    def _preflight(self, row: JournalRow, records: Sequence[TransactionRecord]) -> str | None:
        try:
            balance = balance_from_records(row.ref, records)
            for amount, _ in self._unknown.get(row.ref, ()):
                balance = balance.applied(self.opt.op, amount)
            check_followup(balance, self.opt.op, row.amount, row.currency)
        except RefusedError as exc:
            return f"{PREFLIGHT} {exc.message}"
        return None

    def _record_if_found(self, row: JournalRow, records: Sequence[TransactionRecord]) -> bool:
        """If the gateway already holds our reference, journal its outcome (no re-send) —
        only when the record IS this row's request; another transaction under the reference
        is a conflict, left unknown."""
        intended = Intended(row.new_ref, self.opt.op, row.amount, row.currency)
        verdict, rec, conflicts = verdict_of(intended, list(records))  # the one rule
        if rec is None:
            return False
        if verdict == "conflict":
            self.report.note("conflict")
            self._finish(row, "unknown", txn_id=rec.id, txn_state=rec.state,
                         detail=conflict_note(intended, rec, conflicts))
        else:
            self._by_state(row, rec.state, rec.id)
        return True

    def _by_state(self, row: JournalRow, state: str, txn_id: str | None) -> None:
        """A state's meaning for the row: the history outcome the single command records for
        it, as the row's state (models.outcome)."""
        status = row_state(history_outcome(state))
        if status == "confirmed":
            self._finish(row, "confirmed", txn_id=txn_id, txn_state=state)
        elif status == "refused":
            self._finish(row, "refused", txn_id=txn_id, txn_state=state,
                         detail=f"gateway: {state}")
        else:  # Pending or a state walletctl does not know: looked up by the next run
            self._finish(row, "unknown", txn_id=txn_id, txn_state=state,
                         detail=f"state {state!r}: not known to be done or refused")

    # ---- lookups ---------------------------------------------------------------------------
    def _note(self, event: str) -> None:
        self.report.note(event)

    async def _lookup(self, client: Gateway, reference: str) -> list[TransactionRecord]:
        try:
            return await self.lookup(client, reference)
        except LookupRefused as exc:
            err, what = exc.error, f"lookup {reference}: {exc.error.message}"
            if isinstance(err, GatewayError) and err.status not in (401, 403):
                raise _Refused(what) from None
            self._fatal(err, what if isinstance(err, GatewayError) else None)
            raise Stopped from None
        except Retry as exc:
            if not self.halted:
                self.breaker.failure(f"lookup {reference}: {exc.why}")
            raise _GaveUp(f"lookup {reference} kept failing: {exc.why}") from None


class RowSteps:
    """A batch row's part in each of the money protocol's steps (``ops/money/steps``: the
    order is the single command's, run by :func:`run_async`); the batch's own work rides in
    them as hooks: its rows' locks, the direct path (no lookup for a row alone on its
    original), the journal, the rate limit and group commit before a request leaves, and
    retries of a request proven not applied. A row's outcome is journaled and reported where
    it is known (:meth:`BatchRunner._finish`); a row the run leaves is reported by ``lock``."""

    __slots__ = ("client", "row", "runner", "tries")

    def __init__(self, runner: BatchRunner, client: Gateway, row: JournalRow) -> None:
        self.runner, self.client, self.row = runner, client, row
        self.tries = Tries()

    @asynccontextmanager
    async def lock(self) -> AsyncIterator[None]:
        """The money protocol's per-order lock, shared with single commands and other
        batches recording into the same history: the desk's lease when it is shared, else
        the history file's lock (held from the lookup to the recorded answer; a dry run
        takes none). A row that stops inside it is left (unknown or pending)."""
        runner, row = self.runner, self.row
        if runner.opt.predict:
            try:
                yield
            except (Stopped, _GaveUp, _Refused) as exc:
                self._ended(exc)
            return
        desk = runner._desk_locks(self.client)
        if desk is None and runner._money_locks is None:  # found once per run
            runner._money_locks = money_locks(runner.history)
        key = lock_key(self.client.profile, row.ref)
        async with hold_row(runner._money_locks, desk, key, row.ref):
            try:
                yield
            except (Stopped, _GaveUp, _Refused) as exc:
                self._ended(exc)
            finally:
                runner._probed.pop(row.ref, None)  # answered for this holding only

    def _ended(self, exc: Stopped | _GaveUp | _Refused) -> None:
        runner, row = self.runner, self.row
        if isinstance(exc, _Refused):
            runner._finish(row, "refused", detail=f"gateway: {exc}")
        else:
            runner._left(row, exc.why if isinstance(exc, _GaveUp) else runner._halt_reason())

    async def look_up(self) -> list[TransactionRecord] | None:
        """The original's records; None on the direct path (docs/batch.md, "One round trip,
        or two"): nothing in the journal or the history asks for a look."""
        runner, row = self.runner, self.row
        if runner._direct(row) and not runner._concerns(self.client, row):
            runner.report.note("direct")
            return None
        return await runner._lookup(self.client, row.ref)

    def settle_earlier(self, records: list[TransactionRecord] | None) -> None:
        """The row's own reference found at the gateway (an earlier run's send) ends it;
        unknown intents from outside the batch are resolved."""
        if records is None:
            return None
        if self.runner._record_if_found(self.row, records):
            raise Finished
        self.runner._resolve_earlier(self.client, self.row, records)
        return None

    def plan(self, records: list[TransactionRecord] | None, same: None) -> FollowUpCall | None:
        """The pre-flight against the original's balance, then the request (none in a dry
        run)."""
        runner, row = self.runner, self.row
        if records is not None:
            refusal = runner._preflight(row, records)
            if refusal is not None:
                runner._finish(row, "refused", detail=refusal)
                raise Finished
        return None if runner.opt.predict else runner._template(self.client.profile).call(row)

    def guard(self, call: FollowUpCall | None, records: list[TransactionRecord] | None,
              same: None) -> None:
        runner = self.runner
        if records is not None and not runner.opt.allow_duplicate \
                and runner._held(self.client, self.row, records):
            raise Finished

    def predicted(self, call: None) -> None:
        self.runner._predicted(self.row)

    def approve(self, call: FollowUpCall, same: None) -> None:
        """Nothing per row: the batch's policy and four eyes were settled for its file
        before its first row (``ops/batch/job``)."""
        return None

    async def record(self, call: FollowUpCall, hook: None, same: None) -> None:
        """The rate limit, then 'sent' in the journal and the history's entry begun, in one
        group write with the other rows leaving in this turn (:class:`GroupCommit`)."""
        runner, row = self.runner, self.row
        await runner._gate()
        attempt = runner._attempts[row.key] = runner._attempts.get(row.key, row.attempts) + 1
        await runner._commit_sent((row, attempt))  # committed before the request leaves

    async def send(self, call: FollowUpCall) -> FollowUpResponse | WalletctlError:
        try:
            return await self.client.followup_call(call)
        except (NotConnectedError, RedirectError, UnknownOutcomeError, ResponseError,
                NetworkError, GatewayError) as exc:
            return exc

    async def settle(self, call: FollowUpCall,
                     answer: FollowUpResponse | WalletctlError) -> str | None:
        """The answer's meaning journaled; :data:`AGAIN` after a back-off when the request
        is to leave again (a retry: the same reference)."""
        runner = self.runner
        try:
            await runner._settle(self.client, self.row, answer)
        except Retry as exc:
            try:
                await runner.again(exc, self.tries)
            except Retry:
                if not runner.halted:
                    runner.breaker.failure(f"{runner.opt.op} {self.row.new_ref}: {exc.why}")
                runner._left(self.row, f"gave up after retries: {exc.why}",
                             f"not sent after retries: {exc.why}")
                raise Finished from None
            return AGAIN
        return None


# ---- the history's half of each row's record ------------------------------------------
_GROUP = 64  # completions per history transaction


class BatchAudit:
    """The history's half of a real run: one entry per row, begun when the row is first sent
    in this run (with the journal's ``sent``, before the request leaves) and completed by its
    result; a row the pre-flight refuses is one entry, complete at birth. An entry is the
    transaction at the gateway (merchant, store, operation, new reference): a row begun again
    (a resumed run, another journal over the same file) gets the entry it already has, and
    completes an earlier, interrupted run's unknown entry. Each entry is the single command's
    :class:`~walletctl.history.recorder.Recording`, its outcome and exit ``models.outcome``'s;
    this class is its ``writes``: it collects them, so that the begins of the rows leaving
    together are one transaction (with the journal's ``sent``) and completions are written in
    groups (with the next begins, every 64, and at the end)."""

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
        self._open: dict[str, Recording] = {}  # new reference -> entry, rows sent this run
        self._done: list[tuple[int, Completion]] = []  # completions not yet written

    def flush(self) -> None:
        """Write the completions gathered so far (one transaction)."""
        if self._done:
            self.store.complete_many(self._done)
            self._done.clear()

    def close(self) -> None:
        self.flush()
        self.store.close()

    # ---- the recorder's writes, collected (history.recorder.Writes) ---------------------
    def begin(self, intent: Intent) -> int:
        """A row refused before anything was sent: its one entry, complete at birth."""
        return self.store.begin(intent)

    def complete(self, entry: int, completion: Completion) -> None:
        """Completions are written in groups: one lost to a kill leaves its entry
        `unknown`, which the resumed run (or `history --unknown --reconcile`) completes."""
        self._done.append((entry, completion))
        if len(self._done) >= _GROUP:
            self.flush()

    def _recording(self, row: JournalRow | RowResult, *, sending: bool) -> Recording:
        """The row's entry, recorded by the single command's recorder (``sending``: the
        intent of a request about to leave, which spends the batch's approval)."""
        intent = intent_for(
            self._profile_for(row.profile), self.op, user=self._user, host=self._host,
            original_ref=row.ref, new_ref=row.new_ref, amount=f"{row.amount:f}",
            currency=row.currency, reason=self.reason, batch_id=self.batch_id,
            batch_row=row.line, approval=self.approval if sending else None)
        return Recording(self.store, intent, writes=self)

    def on_send(self, items: list[tuple[JournalRow, int]]) -> None:
        """Rows about to be sent (journal already 'sent'): their entries are begun in one
        transaction, with the completions gathered since the last write."""
        recs = [self._recording(row, sending=True)
                for row, _attempt in items if row.new_ref not in self._open]  # not retries
        if not recs and not self._done:
            return
        ids = self.store.append_many([rec.intent for rec in recs], self._done)
        self._done.clear()
        for rec, entry in zip(recs, ids, strict=True):
            rec.entry = entry
            self._open[rec.intent.new_ref or ""] = rec  # a row's new_ref is never empty

    def on_result(self, result: RowResult) -> None:
        # the row's outcome and exit as a single command would have them (models.outcome)
        outcome = outcome_of_row(result.status)
        code = exit_of(outcome)
        if result.status == "refused" and (result.detail or "").startswith(NOT_FOUND):
            # a 404 stored nothing and the next run sends the row again under this entry:
            # an error, not a refusal (a declined entry never becomes moved)
            outcome = "error"
        note = result.detail or (f"state {result.txn_state}" if result.txn_state else None)
        rec = self._open.pop(result.new_ref, None)
        if rec is None:  # not sent in this run: an earlier, killed run may have sent it
            rec = self._recording(result, sending=False)
            found = self.store.movement(rec.intent)
            if found is not None and found[1] == "unknown":
                rec.entry = found[0]
                note = f"resolved by a resumed batch run: {note or result.status}"
            elif result.status == "refused" and not result.earlier_run:
                # refused by the pre-flight: nothing was sent, one entry complete at birth
                outcome = "refused"
                code = exit_of(outcome)
            else:
                return
        rec.write(outcome, int(code), None, note)
