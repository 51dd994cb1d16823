"""Each batch row in the support desk's history (``walletctl history``).

One entry per row: begun when the row is first sent in this run (the runner calls
``on_send`` after the journal has committed ``sent`` and before the request leaves, once
for all the rows sending in one event-loop turn), and completed by the row's result. A row
the pre-flight refuses is one entry, complete at birth (``refused``). A row sent by an
earlier, interrupted run completes that run's unknown entry when this run learns its
outcome. Begins are committed before the requests leave, in one transaction per group of
sends; completions ride along in that transaction (or are written in groups of 64, and at
the end). Dry runs record nothing; a profile with the history turned off records nothing
either (the journal already makes re-runs safe).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from walletctl.constants import ExitCode
from walletctl.history.recorder import now_utc, os_user
from walletctl.history.store import Completion, HistoryStore, Intent

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.outcome import RowResult

# row status -> (history outcome, exit code of the row as a single command would have it)
_OUTCOME = {
    "confirmed": ("approved", ExitCode.OK),
    "refused": ("declined", ExitCode.DECLINED),
    "unknown": ("unknown", ExitCode.UNKNOWN_OUTCOME),
    "pending": ("error", ExitCode.NETWORK),  # never reached the gateway: nothing was sent
}


_GROUP = 64  # completions per history transaction


class BatchAudit:
    """``on_send`` / ``on_result`` for :class:`~walletctl.ops.batch.runner.BatchRunner`.

    One entry per money movement: an entry is identified by the transaction at the gateway
    (merchant, store, operation, new reference), and the store gives a row that is begun
    again (a resumed run, a run on another journal over the same file, a row interrupted
    after its begin) the entry it already has."""

    def __init__(self, store: HistoryStore, profile: Profile, op: str, batch_id: str,
                 profile_for: Callable[[str | None], Profile] | None = None,
                 approval: int | None = None, reason: str | None = None) -> None:
        self.store = store
        self.approval = approval  # the approval this batch spent (four eyes), if any
        self.reason = reason  # the batch's --reason, in every row's entry
        self.profile = profile
        self.op = op
        self.batch_id = batch_id
        self._profile_for = profile_for or (lambda _name: profile)
        self._user = os_user()
        self._host = socket.gethostname()
        self._open: dict[str, int] = {}  # new reference -> entry id, for rows sent this run
        self._done: list[tuple[int, Completion]] = []  # completions not yet written

    def flush(self) -> None:
        """Write the completions gathered so far (one transaction)."""
        if self._done:
            self.store.complete_many(self._done)
            self._done.clear()

    def close(self) -> None:
        self.flush()
        self.store.close()

    def _intent(self, line: int, ref: str, new_ref: str, amount: str, currency: str,
                profile: str | None, *, outcome: str | None = None,
                exit_code: int | None = None, note: str | None = None) -> Intent:
        prof = self._profile_for(profile)
        return Intent(time=now_utc(), os_user=self._user, host=self._host,
                      profile=prof.name, base_url=prof.base_url,
                      operation=self.op, original_ref=ref, new_ref=new_ref, amount=amount,
                      currency=currency, reason=self.reason, batch_id=self.batch_id,
                      batch_row=line,
                      outcome=outcome, exit_code=exit_code, note=note,
                      merchant_id=prof.merchant_id, store_id=prof.store_id,
                      approval=self.approval if outcome is None else None)

    def on_send(self, items: list[tuple[JournalRow, int]]) -> None:
        """Rows about to be sent (journal already 'sent'): their entries are begun in one
        transaction, with the completions gathered since the last write."""
        rows: list[JournalRow] = []
        intents: list[Intent] = []
        for row, _attempt in items:
            if row.new_ref in self._open:  # a retry of a row already recorded in this run
                continue
            rows.append(row)
            intents.append(self._intent(row.line, row.ref, row.new_ref, f"{row.amount:f}",
                                        row.currency, row.profile))
        if not intents and not self._done:
            return
        ids = self.store.append_many(intents, self._done)
        self._done.clear()
        for row, entry in zip(rows, ids, strict=True):
            self._open[row.new_ref] = entry

    def on_result(self, result: RowResult) -> None:
        profile = result.profile
        outcome, code = _OUTCOME.get(result.status, ("unknown", ExitCode.UNKNOWN_OUTCOME))
        note = result.detail or (f"state {result.txn_state}" if result.txn_state else None)
        entry = self._open.pop(result.new_ref, None)
        if entry is None:  # not sent in this run: an earlier, killed run may have sent it
            found = self.store.movement(self._intent(
                result.line, result.ref, result.new_ref, f"{result.amount:f}", result.currency,
                profile))
            if found is not None and found[1] == "unknown":
                entry = found[0]
                note = f"resolved by a resumed batch run: {note or result.status}"
        if entry is not None:
            # Completions are written in groups: one lost to a kill leaves its entry
            # `unknown`, which the resumed run (or `history --unknown --reconcile`) completes.
            self._done.append((entry, Completion(time=now_utc(), outcome=outcome,
                                                 exit_code=int(code), note=note)))
            if len(self._done) >= _GROUP:
                self.flush()
        elif result.status == "refused" and not result.earlier_run:
            # refused by the pre-flight: nothing was sent, one entry complete at birth
            self.store.begin(self._intent(
                result.line, result.ref, result.new_ref, f"{result.amount:f}",
                result.currency, profile, outcome="refused", exit_code=int(ExitCode.DECLINED),
                note=note))
