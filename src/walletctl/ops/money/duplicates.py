"""The likely-duplicate hold (docs/money.md, "A likely duplicate is held"): a capture, refund
or reversal identical to one the gateway shows or the history holds from the last
``[history] duplicate_window`` minutes is not sent unless ``--allow-duplicate``; a batch's
rows are held against movements from outside their batch only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from walletctl.errors import HeldError
from walletctl.models.ledger import KIND_OF_OP, kind_of
from walletctl.models.money import format_major
from walletctl.models.outcome import REFUSAL_STATES
from walletctl.models.records import parse_timestamp

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import Entry, HistoryStore
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class Duplicate:
    operation: str
    original_ref: str
    reference: str
    amount: Decimal
    currency: str
    time: datetime | None
    who: str | None  # "alice@desk-3 (profile prod)"; None: not in this history

    def error(self, now: datetime) -> HeldError:
        ago = ""
        if self.time is not None:
            secs = max(int((now - self.time).total_seconds()), 0)
            ago = (f" {secs} s ago" if secs < 120 else f" {secs // 60} min ago") + \
                f" ({self.time.strftime('%Y-%m-%dT%H:%M:%SZ')})"
        who = f" by {self.who}" if self.who else " (not made through this history)"
        return HeldError(
            f"likely duplicate: {KIND_OF_OP[self.operation]} {self.reference} of "
            f"{format_major(self.amount, self.currency)} on {self.original_ref} was made"
            f"{ago}{who}; nothing was sent",
            hint="if a second, identical one is really meant, run the command again with "
                 "--allow-duplicate")


def _when(text: str | None) -> datetime | None:
    """A gateway or history time to the second (no zone: UTC, as the gateway's samples are)."""
    when = parse_timestamp(text.replace(" ", "T", 1)) if text else None
    return None if when is None else when.replace(microsecond=0)


def likely_duplicate(store: HistoryStore | None, profile: Profile, *, operation: str,
                     original_ref: str, amount: Decimal, currency: str,
                     records: Iterable[TransactionRecord], now: datetime, itself: frozenset[str],
                     batch_id: str | None = None) -> Duplicate | None:
    """The newest movement identical to this one in the gateway's ``records`` or the
    history's recent movements on the original, or None; ``itself``: this movement's own
    references (its earlier attempts); ``batch_id``: not its own batch's rows."""
    window = profile.history.duplicate_window
    if window <= 0:
        return None
    since = now - timedelta(minutes=window)
    cur = currency.upper()

    def same(ref: str, currency: str, value: Decimal | str | None, when: datetime | None) -> bool:
        return ref not in itself and currency.upper() == cur and value is not None \
            and Decimal(value) == amount and (when is None or when >= since)

    who: dict[str, tuple[str, datetime | None]] = {}
    found: list[tuple[datetime | None, str]] = []
    for e in _recent(store, profile, operation, original_ref, since, batch_id):
        when = _when(e.time)
        if same(e.reference, e.currency or "", e.amount, when):
            who[e.reference] = (f"{e.who} (profile {e.profile})", when)
            found.append((when, e.reference))
    for r in records:
        when = _when(r.transaction_date_time)  # no time shown: not known to be recent
        if when is not None and kind_of(r.type) == KIND_OF_OP[operation] \
                and r.state not in REFUSAL_STATES \
                and same(r.client_system_transaction_id, r.currency_code, r.transaction_amount,
                         when):
            found.append((when, r.client_system_transaction_id))
    if not found:
        return None
    when, ref = max(found, key=lambda f: f[0] or since)
    person, recorded = who.get(ref, (None, None))
    return Duplicate(operation, original_ref, ref, amount, cur, recorded or when, person)


def _recent(store: HistoryStore | None, profile: Profile, operation: str, original_ref: str,
            since: datetime, batch_id: str | None) -> list[Entry]:
    """The history's movements of ``operation`` on the original since ``since``, but not
    ``batch_id``'s own rows."""
    if store is None:
        return []
    return [e for e in store.recent(
        merchant_id=profile.merchant_id, store_id=profile.store_id, operation=operation,
        original_ref=original_ref, since=since.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
        if batch_id is None or e.batch_id != batch_id]
