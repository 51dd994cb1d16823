"""``walletctl recon``: :func:`reconcile` reads what the desk recorded in the window (history
entries, batch journals, the orders named by ``--ref``/``--refs``), looks every order up on
the batch engine and compares each as its lookup arrives. Nothing is sent but lookups.
"""

from __future__ import annotations

import asyncio
import csv
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.errors import ConfigError, UsageError
from walletctl.history.store import Entry, Filters, HistoryStore
from walletctl.ops.batch.balance_report import BalanceReport, LookupOptions
from walletctl.ops.batch.flow import stopped_by_signals
from walletctl.ops.recon.compare import (
    OPERATIONS,
    Expected,
    Finding,
    ReconResult,
    compare_original,
    unapproved,
)

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class ReconRequest:
    until: str  # the history's time form, 2026-11-22T00:00:00.000Z (exclusive)
    since: str | None = None  # inclusive; None: from the first entry
    refs: tuple[str, ...] = ()  # only these orders (and each looked up, recorded or not)
    refs_file: Path | None = None  # more orders to look up (a shop's order export)
    journals: tuple[Path, ...] = ()
    operations: frozenset[str] = frozenset(OPERATIONS)
    lookup: LookupOptions = field(default_factory=LookupOptions)
    record: bool = False  # file each mismatch as a finding in the history (recon --record)
    # recon --open: every order with an entry since then (whatever the window) is looked up
    # too, and every record of each order looked up is compared, whatever its time (those
    # dated outside the window are findings apart, never in the totals)
    open_since: str | None = None


def existing_history(profile: Profile,
                     purpose: str) -> tuple[str, str, HistoryStore | None]:
    """The profile's history: where (no password), its backend, and the store opened when
    there is one to read (a database; a file that exists)."""
    from walletctl.history import open_existing

    found, store = open_existing(profile, purpose)
    return found.where, found.backend, store


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def reconcile(profile: Profile, request: ReconRequest, *,
              progress: Callable[[], None] | None = None) -> ReconResult:
    """Compare the profile's history and the named journals with the gateway (see the
    module's docstring); ``progress`` is called once per order looked up."""
    from walletctl.ops.batch.balance_report import Report

    named, backend, store = existing_history(profile, "walletctl recon")
    if store is None and request.record:
        raise ConfigError(f"recon --record: no history at {named} to record findings in",
                          hint="findings are kept in the history: record a movement first, "
                               "or set [history] in the profile")
    try:
        plan = Plan()
        refs = frozenset(request.refs)
        if store is not None:
            history_entries(store, profile, since=request.since, until=request.until,
                            refs=refs, operations=request.operations, plan=plan)
        desk = DeskRefs(store, profile, plan)
        for path in request.journals:
            journal_rows(path, profile, request.operations, plan, desk, refs)
        plan.extra.update(refs)
        if store is not None and request.open_since is not None:
            plan.extra.update(open_orders(store, profile, since=request.open_since,
                                          refs=refs))
        if request.refs_file is not None:
            plan.extra.update(read_refs(request.refs_file))
        result = ReconResult(
            profile=profile.name, merchant_id=profile.merchant_id, store_id=profile.store_id,
            history=named, backend=backend,
            journals=[str(p) for p in request.journals], since=request.since,
            until=request.until, operations=sorted(request.operations), report=Report(),
            open_since=request.open_since)
        result.counts.not_compared = plan.not_compared
        asyncio.run(_look_up(profile, request, plan, desk, result, progress))
        if store is not None:
            from walletctl.history.rulebook import unapproved_check

            why = unapproved_check(store)
            result.findings += [f for exps in plan.expected.values()
                                for f in unapproved(exps, why)]
        result.findings.sort(key=Finding.sort_key)
        if store is not None and not result.report.interrupted:
            from walletctl.ops.recon.on_file import with_files

            result.findings = with_files(store, profile, result.findings,
                                         record=request.record)
    finally:
        if store is not None:
            store.close()
    return result


async def _look_up(profile: Profile, request: ReconRequest, plan: Plan, desk: DeskRefs,
                   result: ReconResult, progress: Callable[[], None] | None) -> None:
    from zoneinfo import ZoneInfo

    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.models.records import parse_timestamp

    since, until = _when(request.since), _when(request.until)
    zone = ZoneInfo(profile.timezone) if profile.timezone else UTC

    def in_window(rec: TransactionRecord) -> bool:
        when = (parse_timestamp(rec.transaction_date_time, zone)
                if rec.transaction_date_time else None)
        if when is None or until is None:
            return True  # undated: counted where it may belong
        return (since is None or when >= since) and when < until

    client = AsyncGatewayClient(profile, max_connections=request.lookup.concurrency)
    engine = BalanceReport(client, request.lookup)
    result.report = engine.report
    originals = plan.originals()
    result.counts.originals = len(originals)
    try:
        with stopped_by_signals(engine.stop):
            async for row in engine.rows((n, ref, "") for n, ref in enumerate(originals, 1)):
                if progress is not None:
                    progress()
                expected = plan.expected.get(row.ref, [])
                records = row.records
                if records is None:
                    compared = f"; {len(expected)} recorded movement(s) not compared" \
                        if expected else ""
                    result.findings.append(Finding(
                        "unchecked", row.ref, row.ref, None,
                        f"lookup not answered: {row.error or 'not looked up'}{compared}"))
                    continue
                result.counts.entries += sum(1 for e in expected if e.entry.id)
                result.counts.journal_rows += sum(1 for e in expected if not e.entry.id)
                result.findings.extend(compare_original(
                    row.ref, expected, records, in_window=in_window,
                    recorded_elsewhere=partial(desk.of, row.ref),
                    operations=request.operations, totals=result.totals, counts=result.counts,
                    every_record=request.open_since is not None))
    finally:
        await client.aclose()


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


def open_orders(store: HistoryStore, profile: Profile, *, since: str,
                refs: frozenset[str]) -> set[str]:
    """The orders that may still move money (``recon --open``): every original the history
    has an entry on, at the profile's merchant and store, begun since ``since`` (the
    documented age) up to now, whatever the window (``--until`` too); only the ``refs``
    orders when given. What the
    gateway holds for each is looked up: a capture or refund made off the desk on an order
    whose last entry is weeks old is found the next night."""
    found = store.originals_since(since, merchant=(profile.merchant_id, profile.store_id),
                                  legacy=(profile.name, profile.base_url))
    return {ref for ref in found if not refs or ref in refs}


class DeskRefs:
    """The references the desk recorded on an original at any time (history entries sent,
    journal rows): what explains a record outside the window. Asked when needed, kept."""

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
    from walletctl.ops.batch.journal import NOT_FOUND, PREFLIGHT, read_journal

    _check_file("--journal", path)
    batch_id, op, rows = read_journal(path)
    for row in rows:
        ref, new_ref, detail = row.ref, row.new_ref, row.detail or ""
        if refs and ref not in refs:
            continue
        if op not in operations or row.profile not in (None, profile.name):
            plan.not_compared += 1
            continue
        outcome = _JOURNAL_OUTCOMES.get(row.state)
        if row.state == "refused" and not detail.startswith(PREFLIGHT):  # pre-flight: not sent
            outcome = "error" if detail.startswith(NOT_FOUND) else "declined"
        if outcome is None:
            if row.state != "planned":
                plan.not_compared += 1
            continue
        plan.journal_refs.setdefault(ref, set()).add(new_ref)
        if new_ref in desk.history(ref):
            continue
        entry = Entry(
            id=0, time="", os_user="", host="", profile=profile.name,
            base_url=profile.base_url, operation=op, original_ref=ref, new_ref=new_ref,
            amount=f"{row.amount}", currency=row.currency, outcome=outcome, http_status=None,
            exit_code=None, batch_id=batch_id, batch_row=row.line, reason=None,
            note=row.detail, completed=None, merchant_id=profile.merchant_id,
            store_id=profile.store_id)
        plan.add(Expected(entry, f"journal {path.name} line {row.line}"))


def _check_file(flag: str, path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"{flag} {path}: "
                         + ("no such file" if not path.exists() else "not a regular file"))


def read_refs(path: Path) -> Iterator[str]:
    """The references of a file of orders (the forms ``lookup --batch`` reads); a bad line
    or an unreadable file is a usage error naming the flag (exit 2)."""
    from walletctl.ops.batch.balance_report import iter_refs

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
