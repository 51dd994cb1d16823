"""What the desk recorded, for ``walletctl recon``: history entries, batch journals, and the
orders to look up (``--ref``, ``--refs FILE``).

The history is read through :class:`~walletctl.history.store.HistoryStore` only, so a local
file and a team's PostgreSQL database are read the same way. Only the profile's merchant and
store count (entries written before the history kept merchant ids: the profile's name at
its URL). Journals are read, never locked or written: a running batch may hold one.
"""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.errors import UsageError
from walletctl.history.store import Entry, Filters, HistoryStore
from walletctl.ops.recon.model import OPERATIONS, Expected

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

# journal row state -> the history's outcome (None: never sent, not compared)
_JOURNAL_OUTCOMES = {"sent": "unknown", "unknown": "unknown", "confirmed": "approved"}


@dataclass
class Plan:
    """The orders to look up and what the desk recorded on each."""

    expected: dict[str, list[Expected]] = field(default_factory=dict)  # original -> entries
    extra: set[str] = field(default_factory=set)  # orders named by --ref / --refs
    journal_refs: dict[str, set[str]] = field(default_factory=dict)  # original -> references
    not_compared: int = 0

    def add(self, exp: Expected) -> None:
        self.expected.setdefault(exp.original, []).append(exp)

    def originals(self) -> list[str]:
        """Every order to look up, sorted (a deterministic report)."""
        return sorted(set(self.expected) | self.extra)


def ours(entry: Entry, profile: Profile) -> bool:
    """Whether an entry was made at the profile's merchant and store."""
    if entry.merchant_id is None:  # written before the history kept merchant ids
        return (entry.profile, entry.base_url) == (profile.name, profile.base_url)
    return (entry.merchant_id, entry.store_id) == (profile.merchant_id, profile.store_id)


def history_entries(store: HistoryStore, profile: Profile, *, since: str | None,
                    until: str, refs: Iterable[str], operations: frozenset[str],
                    plan: Plan) -> None:
    """The profile's entries begun in the window (on the ``refs`` orders only, when given)."""
    names = sorted(set(refs))
    queries = ([Filters(since=since, until=until, original_ref=ref) for ref in names]
               if names else [Filters(since=since, until=until)])
    for filters in queries:
        for entry in store.entries(filters):
            if entry.operation not in operations or not ours(entry, profile):
                continue
            if entry.outcome == "refused":  # walletctl refused it: nothing was sent
                plan.not_compared += 1
                continue
            plan.add(Expected(entry, f"history #{entry.id}"))


class DeskRefs:
    """The references the desk recorded on an original at any time (its history entries
    that were sent, and its journals' rows): what explains a record outside the window.
    One indexed query per original, asked for only when needed, remembered."""

    def __init__(self, store: HistoryStore | None, profile: Profile, plan: Plan) -> None:
        self.store = store
        self.profile = profile
        self.plan = plan
        self._known: dict[str, set[str]] = {}

    def history(self, original: str) -> set[str]:
        if original not in self._known:
            found: set[str] = set()
            if self.store is not None:
                found = {e.reference for e in self.store.entries(Filters(original_ref=original))
                         if e.outcome != "refused" and e.operation in OPERATIONS
                         and ours(e, self.profile)}
            self._known[original] = found
        return self._known[original]

    def of(self, original: str) -> set[str]:
        return self.history(original) | self.plan.journal_refs.get(original, set())


def journal_rows(path: Path, profile: Profile, operations: frozenset[str], plan: Plan,
                 desk: DeskRefs, refs: frozenset[str]) -> None:
    """A batch journal's sent rows as expected movements; a row the history records too is
    compared through the history. ``refs``: only these orders, when given."""
    batch_id, op, rows = read_journal(path)
    for line, ref, new_ref, amount, currency, row_profile, state, txn_state, detail in rows:
        if refs and ref not in refs:
            continue
        if op not in operations or (row_profile is not None and row_profile != profile.name):
            plan.not_compared += 1
            continue
        outcome = _journal_outcome(state, txn_state, detail)
        if outcome is None:
            if state != "planned":
                plan.not_compared += 1
            continue
        plan.journal_refs.setdefault(ref, set()).add(new_ref)
        if new_ref in desk.history(ref):
            continue
        entry = Entry(
            id=0, time="", os_user="", host="", profile=profile.name,
            base_url=profile.base_url, operation=op, original_ref=ref, new_ref=new_ref,
            amount=amount, currency=currency, outcome=outcome, http_status=None,
            exit_code=None, batch_id=batch_id, batch_row=line, reason=None, note=detail,
            completed=None, merchant_id=profile.merchant_id, store_id=profile.store_id)
        plan.add(Expected(entry, f"journal {path.name} line {line}"))


def _journal_outcome(state: str, txn_state: str | None, detail: str | None) -> str | None:
    from walletctl.ops.batch.journal import NOT_FOUND, PREFLIGHT

    if state == "refused":
        if (detail or "").startswith(PREFLIGHT):
            return None  # refused by walletctl's own pre-flight: nothing was sent
        return "error" if (detail or "").startswith(NOT_FOUND) else "declined"
    return _JOURNAL_OUTCOMES.get(state)


JournalRecord = tuple[int, str, str, str, str, str | None, str, str | None, str | None]


def read_journal(path: Path) -> tuple[str, str, list[JournalRecord]]:
    """(batch id, operation, rows in line order) of a batch journal, opened read-only.
    Anything else is a usage error naming the flag: exit 2."""
    _check_file("--journal", path)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise UsageError(f"--journal {path}: cannot open ({exc})") from None
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        rows = db.execute(
            "SELECT line, ref, new_ref, amount, currency, profile, state, txn_state, detail "
            "FROM rows ORDER BY line, key").fetchall()
    except sqlite3.Error as exc:
        raise UsageError(f"--journal {path}: not a walletctl batch journal ({exc})",
                         hint="pass the .journal file a capture/refund/reverse --batch run "
                              "wrote") from None
    finally:
        db.close()
    op = meta.get("op")
    if not meta.get("batch_id") or op not in ("capture", "refund", "reverse"):
        raise UsageError(f"--journal {path}: not a walletctl batch journal (no batch id "
                         "and operation in it)")
    return str(meta["batch_id"]), str(op), [
        (int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]),
         None if r[5] is None else str(r[5]), str(r[6]),
         None if r[7] is None else str(r[7]), None if r[8] is None else str(r[8]))
        for r in rows]


def _check_file(flag: str, path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"{flag} {path}: "
                         + ("no such file" if not path.exists() else "not a regular file"))


def read_refs(path: Path) -> Iterator[str]:
    """The references of a file of orders (CSV with a ``ref`` column, one a line, or JSON
    Lines with ``ref``: the forms ``lookup --batch`` reads). A line that holds no valid
    reference, or a file that cannot be read, is a usage error naming the flag: exit 2."""
    from walletctl.ops.batch.lookup import iter_refs

    _check_file("--refs", path)
    try:
        for line, ref, problem in iter_refs(path):
            if ref is None:
                shown, _, why = problem.rpartition("\0")
                what = f"{shown!r}: {why}" if shown else why
                raise UsageError(f"--refs {path} line {line}: {what}")
            yield ref
    except OSError as exc:
        raise UsageError(f"--refs {path}: cannot read ({exc.strerror})") from None
    except (UnicodeError, csv.Error) as exc:
        raise UsageError(f"--refs {path}: not a file of references ({exc})") from None
