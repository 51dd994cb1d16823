"""The async batch runner: exactly-once follow-ups on one connection pool.

The money protocol's steps are the single command's (``ops.money`` and
``models.outcome``): the same per-original lock, earlier-intent judgement, duplicate hold,
answer interpretation and history identity. What is the batch's own is scheduling: rows
naming the same original run one after another, others concurrently; retries; group
commit. Per row::

    journal final (confirmed/refused)?  -> skip (an earlier run did it)
    lock the original (shared with single commands and other batches on this machine)
    direct row? (the only row on its original, never sent, no journal history, and the
                 history holds nothing on the original from outside the batch)
                                        -> straight to the POST below (one round trip);
                                           the gateway's own rules refuse what the
                                           pre-flight would have refused
    lookup(original ref)                -> our new reference already there? -> is it ours
                                           (operation, amount, currency)? record it : conflict
                                        -> earlier unknown intents from outside resolved
                                        -> pre-flight balance check (ledger rules) -> refused?
                                        -> likely duplicate of a movement from outside? held
    journal 'sent' (committed; one write per loop turn for all rows sending in it)
                                ->  POST follow-up
        2xx                     -> Approved: confirmed / a stated refusal: refused /
                                   any other state: unknown (looked up by the next run)
        connect failed          -> nothing sent: back to 'planned', back off, send again
        429 / 5xx / 409 / drop  -> 'unknown': lookup(new ref) -> found: record it
                                   (429: after the pause)      proven absent: send again
                                                               (same reference)
        404                     -> refused, nothing stored: sent again by the next run
        3xx                     -> 'unknown', stop the batch (the base_url is wrong)
        other documented 4xx    -> refused

A row is re-sent ONLY after a lookup proved its reference absent, and always with the same
reference. Retries: jittered exponential backoff, bounded attempts (see ``_retrying``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from walletctl.errors import (
    GatewayError,
    NetworkError,
    NotConnectedError,
    RedirectError,
    ResponseError,
    UnknownOutcomeError,
)
from walletctl.models.outcome import meaning_of_failure
from walletctl.ops.batch.commit import GroupCommit
from walletctl.ops.batch.control import (
    Gateway,
    _Done,
    _GaveUp,
    _Refused,
    _Retry,
    _Stopped,
)
from walletctl.ops.batch.journal import (
    FINAL_STATES,
    NOT_FOUND,
    Journal,
    JournalRow,
    State,
)
from walletctl.ops.batch.outcome import (
    RequestTemplate,
    RowResult,
    RunOptions,
    RunReport,
    build_request,
    request_problem,
)
from walletctl.ops.batch.steps import RowSteps
from walletctl.ops.money.lock import DeskLocks, MoneyLocks, hold_row, lock_key, money_locks

__all__ = ["BatchRunner", "Gateway", "RowResult", "RunOptions", "RunReport", "build_request",
           "request_problem"]

if TYPE_CHECKING:
    from walletctl.client.gateway import FollowUpCall
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore


class BatchRunner(RowSteps):
    report: RunReport

    def __init__(
        self,
        journal: Journal,
        gateway_for: Callable[[str | None], Gateway],
        options: RunOptions,
        *,
        on_result: Callable[[RowResult], None] | None = None,
        on_start: Callable[[JournalRow], None] | None = None,
        on_send: Callable[[list[tuple[JournalRow, int]]], None] | None = None,
        history: HistoryStore | None = None,
    ) -> None:
        super().__init__(options.rate, options.max_failures)
        # The shared history (None: off, or a dry run): earlier intents and the duplicate
        # hold look there, as the single command's do.
        self.history = history
        self._money_locks: MoneyLocks | None = None
        self._desk: DeskLocks | None = None
        self._desk_ready = False
        self.journal = journal
        self.gateway_for = gateway_for
        self.opt = options
        self.on_result = on_result
        self.on_start = on_start
        # Called with the rows whose requests are about to leave (journal already 'sent'),
        # each with its attempt number, in the same group write; a row's outcome arrives
        # through on_result. One place each, so an audit log can hook both.
        self.on_send = on_send
        self._commit_sent = GroupCommit(self._write_sent)
        self._connect_failures: dict[str, int] = {}  # per row, only until the first answer
        self.report = RunReport(breaker_threshold=options.max_failures)
        self._locks: dict[str, list[Any]] = {}  # ref -> [Lock, users]
        # Rows left 'unknown' this run, per original: counted as applied by later pre-flights.
        self._unknown: dict[str, list[tuple[Decimal, str]]] = {}
        self._attempts: dict[str, int] = {}  # rows in flight only (popped when reported)
        self._templates: dict[str, RequestTemplate] = {}  # per profile name
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
        if self.halted:  # a row left sent/unknown by an earlier run may have been applied
            status = "unknown" if row.state in ("sent", "unknown") else "pending"
            self._emit(row, status, detail=self._halt_reason())
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

    async def _process_locked(self, row: JournalRow) -> None:
        if self.halted:
            status = "unknown" if row.state in ("sent", "unknown") else "pending"
            self._emit(row, status, detail=self._halt_reason())
            return
        if self.on_start is not None:
            self.on_start(row)
        client = self.gateway_for(row.profile)
        if self.opt.predict:
            await self._row(client, row)
            return
        prof = client.profile
        # The money protocol's per-original lock, shared with single commands and other
        # batches on this machine, and at the desk when the history is shared (held from
        # the lookup to the recorded answer).
        if self._money_locks is None:  # found once per run (the path lookup is not free)
            self._money_locks = money_locks()
        key = lock_key(prof.base_url, prof.merchant_id, prof.store_id, row.ref)
        async with hold_row(self._money_locks, self._desk_locks(client), key, row.ref):
            try:
                await self._row(client, row)
            finally:
                self._probed.pop(row.ref, None)  # answered for this holding only

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

    async def _row(self, client: Gateway, row: JournalRow) -> None:
        try:
            if self._direct(row) and not self._concerns(client, row):
                self.report.note("direct")
                await self._send(client, row)
                return
            records = await self._lookup(client, row.ref)
            if self._record_if_found(row, records):
                return
            self._resolve_earlier(client, row, records)
            if self.opt.preflight:
                refusal = self._preflight(row, records)
                if refusal is not None:
                    self._finish(row, "refused", detail=refusal)
                    return
            if not self.opt.allow_duplicate and self._held(client, row, records):
                return
            if self.opt.predict:
                self._predicted(row)
                return
            await self._send(client, row)
        except (_Stopped, _GaveUp) as exc:
            current = self.journal.get(row.key)
            state = current.state if current else row.state
            why = exc.why if isinstance(exc, _GaveUp) else self._halt_reason()
            if state in ("sent", "unknown"):
                self._finish(row, "unknown", detail=why)
            else:
                self._emit(row, "pending", detail=why)
        except _Refused as exc:
            self._finish(row, "refused", detail=f"gateway: {exc}")
        except _Done:
            pass

    def _direct(self, row: JournalRow) -> bool:
        """One round trip: the row is the only one on its original (its key is ``ref#0`` and
        there is no ``ref#1``, in this file or an earlier run's), it was never sent and has
        no history. Its new reference is then certainly unknown to the gateway, so the
        lookup could find nothing to reconcile, and the gateway itself refuses what the
        pre-flight would refuse. One primary-key read: nothing grows with the journal."""
        return (self.opt.direct and not self.opt.predict and self.opt.preflight
                and row.state == "planned" and row.attempts == 0 and row.detail is None
                and row.key == f"{row.ref}#0" and self.journal.get(f"{row.ref}#1") is None)

    def _predicted(self, row: JournalRow) -> None:
        """Dry run: the row passed the pre-flight; later rows on its original see it applied."""
        self.journal.finish(row.key, "planned", detail="would-send")
        if row.key != f"{row.ref}#0" or self.journal.get(f"{row.ref}#1") is not None:
            self._unknown.setdefault(row.ref, []).append((row.amount, row.new_ref))
        self._emit(row, "pending", detail="would-send")

    # ---- follow-ups ----------------------------------------------------------------------
    async def _send(self, client: Gateway, row: JournalRow) -> None:
        call = self._template(client.profile).call(row)
        try:
            await self._retrying(lambda: self._attempt(client, row, call))
        except _Retry as exc:
            if not self.halted:
                self.breaker.failure(f"{self.opt.op} {row.new_ref}: {exc.why}")
            current = self.journal.get(row.key)
            state = current.state if current else "planned"
            if state in ("sent", "unknown"):
                self._finish(row, "unknown", detail=f"gave up after retries: {exc.why}")
            else:
                self._emit(row, "pending", detail=f"not sent after retries: {exc.why}")

    def _write_sent(self, items: list[tuple[JournalRow, int]]) -> None:
        self.journal.mark_sent_many([row.key for row, _ in items])
        self.report.sent_rows += sum(1 for _, attempt in items if attempt == 1)
        if self.on_send is not None:
            self.on_send(items)

    async def _attempt(self, client: Gateway, row: JournalRow, call: FollowUpCall) -> None:
        await self._gate()
        attempt = self._attempts[row.key] = self._attempts.get(row.key, row.attempts) + 1
        await self._commit_sent((row, attempt))  # committed before the request leaves
        try:
            resp = await client.followup_call(call)
        except NotConnectedError as exc:  # the connection was never made: nothing was sent
            self.journal.finish(row.key, "planned", detail=exc.message)
            self._connect_failed(exc, row.key)
            raise _Retry(exc.message) from None
        except RedirectError as exc:
            # Not followed, and the same for every row: stop. Left 'unknown' (a redirect
            # should mean nothing was processed; the next run's lookup makes sure).
            self._heard()
            self.journal.finish(row.key, "unknown", detail=exc.message)
            self._fatal(exc)
            raise _Stopped from None
        except (UnknownOutcomeError, ResponseError, NetworkError) as exc:
            self.report.note("no_answer")
            self.journal.finish(row.key, "unknown", detail=exc.message)
            await self._reconcile(client, row, settle=True, why=exc.message)
        except GatewayError as exc:
            self._heard()
            self._note_status(exc.status)
            if exc.status in (401, 403):
                self.breaker.success()
                self.journal.finish(row.key, "planned", detail=exc.message)
                self._fatal(exc)
                raise _Stopped from None
            if meaning_of_failure(exc) == "refused":  # a documented 4xx: nothing stored
                self.breaker.success()
                if exc.status == 404:  # the next run sends it again
                    self._finish(row, "refused", detail=f"{NOT_FOUND} {exc.message}")
                else:
                    self._finish(row, "refused", detail=f"gateway: {exc.message}")
                raise _Done from None
            # 429, 5xx, 409, ...: the request may have been read: unknown until looked up
            self.journal.finish(row.key, "unknown", detail=exc.message)
            throttled = exc.status == 429
            ra = exc.retry_after if throttled else None
            if throttled:
                self.throttled(ra, self.opt.backoff_initial, exc.retry_after_asked)
            elif exc.status < 500:
                self.breaker.success()
            await self._reconcile(client, row, settle=exc.status < 500, why=exc.message,
                                  throttled=throttled, retry_after=ra)
        self._heard()
        self.breaker.success()
        self._by_state(row, resp.state, resp.id)
        raise _Done

    async def _reconcile(
        self, client: Gateway, row: JournalRow, *, settle: bool, why: str,
        throttled: bool = False, retry_after: float | None = None,
    ) -> NoReturn:
        """The outcome is unclear: look the new reference up. Found -> _Done; absent -> _Retry."""
        found = self._record_if_found(row, await self._lookup(client, row.new_ref))
        if not found and settle and self.opt.settle > 0:
            await asyncio.sleep(self.opt.settle)
            found = self._record_if_found(row, await self._lookup(client, row.new_ref))
        if found:
            self.report.note("found_on_lookup")
            raise _Done
        self.report.note("absent_on_lookup")
        # Proven absent: the row was never applied. Back to planned, send again (same ref).
        self.journal.finish(row.key, "planned", detail=f"absent after: {why}")
        raise _Retry(f"{why} (lookup: absent)", retry_after=retry_after, throttled=throttled)

    def _template(self, profile: Profile) -> RequestTemplate:
        found = self._templates.get(profile.name)
        if found is None:
            found = self._templates[profile.name] = RequestTemplate(profile, self.opt.op)
        return found

    # ---- results -------------------------------------------------------------------------
    def _finish(
        self,
        row: JournalRow,
        state: State,
        *,
        txn_id: str | None = None,
        txn_state: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.journal.finish(row.key, state, txn_id=txn_id, txn_state=txn_state, detail=detail)
        if state == "unknown":
            self._unknown.setdefault(row.ref, []).append((row.amount, row.new_ref))
        self._emit(row, state, txn_id=txn_id, txn_state=txn_state, detail=detail)

    def _emit(
        self,
        row: JournalRow,
        status: str,
        *,
        txn_id: str | None = None,
        txn_state: str | None = None,
        detail: str | None = None,
        earlier: bool = False,
    ) -> None:
        if earlier:
            txn_id, txn_state, detail = row.txn_id, row.txn_state, row.detail
            self.report.earlier += 1
        self.report.counts[status] = self.report.counts.get(status, 0) + 1
        if status == "confirmed":
            totals = self.report.confirmed_totals
            totals[row.currency] = totals.get(row.currency, Decimal(0)) + row.amount
        attempts = self._attempts.pop(row.key, row.attempts)
        if self.on_result is not None:
            self.on_result(RowResult(
                row.line, row.ref, row.new_ref, self.opt.op, row.amount, row.currency, status,
                txn_id, txn_state, detail, attempts, earlier, row.profile,
            ))
