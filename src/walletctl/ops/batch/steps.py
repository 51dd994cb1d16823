"""The money protocol's steps for one batch row: the single command's functions
(``ops.money``, ``models.outcome``) applied to a journal row. Split from runner.py, which
keeps the scheduling (the order of the steps, retries, group commit)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from walletctl.errors import RefusedError
from walletctl.models.outcome import (
    Intended,
    conflict_note,
    meaning_of_state,
)
from walletctl.ops.batch.calls import GatewayCalls
from walletctl.ops.batch.journal import PREFLIGHT, Journal, JournalRow, State
from walletctl.ops.money.duplicates import likely_duplicate
from walletctl.ops.money.earlier import needs_lookup, resolve_earlier, verdict_of

if TYPE_CHECKING:
    from walletctl.history.store import HistoryStore
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.batch.control import Gateway


class RowSteps(GatewayCalls):
    """For :class:`~walletctl.ops.batch.runner.BatchRunner`."""

    journal: Journal
    history: HistoryStore | None
    # Rows left 'unknown' this run, per original: counted as applied by later pre-flights.
    _unknown: dict[str, list[tuple[Decimal, str]]]
    _since: str | None = None
    # original -> whether the history holds something on it, asked together with the row's
    # desk lock (a shared history: see ops.money.lock.DeskLocks); used once
    _probed: dict[str, bool]

    def _finish(self, row: JournalRow, state: State, *, txn_id: str | None = None,
                txn_state: str | None = None, detail: str | None = None) -> None:
        raise NotImplementedError

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
        from walletctl.models.ledger import balance_from_records, check_followup

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
        """A state's meaning for the row (models.outcome, as for the single command)."""
        meaning = meaning_of_state(state)
        if meaning == "approved":
            self._finish(row, "confirmed", txn_id=txn_id, txn_state=state)
        elif meaning == "declined":
            self._finish(row, "refused", txn_id=txn_id, txn_state=state,
                         detail=f"gateway: {state}")
        else:  # Pending or a state walletctl does not know: looked up by the next run
            self._finish(row, "unknown", txn_id=txn_id, txn_state=state,
                         detail=f"state {state!r}: not known to be done or refused")

