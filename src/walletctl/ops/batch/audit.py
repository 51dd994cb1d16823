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
    """``on_send`` / ``on_result`` for :class:`~walletctl.ops.batch.runner.BatchRunner`."""

    def __init__(self, store: HistoryStore, profile: Profile, op: str, batch_id: str) -> None:
        self.store = store
        self.profile = profile
        self.op = op
        self.batch_id = batch_id
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

    def _intent(self, line: int, ref: str, new_ref: str, amount: str, currency: str, *,
                outcome: str | None = None, exit_code: int | None = None,
                note: str | None = None) -> Intent:
        return Intent(time=now_utc(), os_user=self._user, host=self._host,
                      profile=self.profile.name, base_url=self.profile.base_url,
                      operation=self.op, original_ref=ref, new_ref=new_ref, amount=amount,
                      currency=currency, batch_id=self.batch_id, batch_row=line,
                      outcome=outcome, exit_code=exit_code, note=note)

    def _earlier(self, ref: str, new_ref: str) -> int | None:
        """The unknown entry an earlier (killed) run left for this row, if any."""
        for entry in self.store.unresolved(base_url=self.profile.base_url, operation=self.op,
                                           original_ref=ref):
            if entry.new_ref == new_ref and entry.batch_id == self.batch_id:
                return entry.id
        return None

    def on_send(self, items: list[tuple[JournalRow, int]]) -> None:
        """Rows about to be sent (journal already 'sent'): their entries are begun in one
        transaction, with the completions gathered since the last write."""
        rows: list[JournalRow] = []
        intents: list[Intent] = []
        for row, _attempt in items:
            if row.new_ref in self._open:  # a retry of a row already recorded in this run
                continue
            # A row an earlier run sent (and lost track of) goes on under that run's entry.
            entry = self._earlier(row.ref, row.new_ref) if row.attempts else None
            if entry is not None:
                self._open[row.new_ref] = entry
                continue
            rows.append(row)
            intents.append(self._intent(row.line, row.ref, row.new_ref, f"{row.amount:f}",
                                        row.currency))
        if not intents and not self._done:
            return
        ids = self.store.append_many(intents, self._done)
        self._done.clear()
        for row, entry in zip(rows, ids, strict=True):
            self._open[row.new_ref] = entry

    def on_result(self, result: RowResult) -> None:
        outcome, code = _OUTCOME.get(result.status, ("unknown", ExitCode.UNKNOWN_OUTCOME))
        note = result.detail or (f"state {result.txn_state}" if result.txn_state else None)
        entry = self._open.pop(result.new_ref, None)
        if entry is None:  # not sent in this run: an earlier, killed run may have sent it
            entry = self._earlier(result.ref, result.new_ref)
            if entry is not None:
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
                result.currency, outcome="refused", exit_code=int(ExitCode.DECLINED),
                note=note))
