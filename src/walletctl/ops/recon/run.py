"""``walletctl recon``: the history (and batch journals) against lookups at the gateway.

:func:`reconcile` is the one operation: it reads what the desk recorded in the window
(``sources``), looks every order up on the batch engine
(:class:`~walletctl.ops.batch.lookup.BalanceReport`: concurrency, token bucket, the shared
Retry-After pause, retries and the circuit breaker), compares each order as its lookup
arrives (``compare``) and returns a :class:`~walletctl.ops.recon.model.ReconResult`. It
reads only: nothing is sent but lookups; with ``record``, each mismatch not yet on file is
filed as a finding in the history (``on_file``), and every finding shows what is on file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.errors import ConfigError, GatewayError
from walletctl.ops.batch.flow import stopped_by_signals
from walletctl.ops.batch.lookup import BalanceReport, LookupOptions
from walletctl.ops.recon.compare import compare_original
from walletctl.ops.recon.model import OPERATIONS, Finding, ReconResult
from walletctl.ops.recon.sources import (
    DeskRefs,
    Plan,
    history_entries,
    journal_rows,
    read_refs,
)

if TYPE_CHECKING:
    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore
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


class _Keeping:
    """The engine's client, keeping each answered lookup's records for the comparison (an
    unknown reference, 404, is an answer: nothing under it)."""

    def __init__(self, client: AsyncGatewayClient) -> None:
        self.client = client
        self.found: dict[str, list[TransactionRecord]] = {}

    async def lookup(self, reference: str) -> list[TransactionRecord]:
        try:
            records = await self.client.lookup(reference)
        except GatewayError as exc:
            if exc.status != 404:
                raise
            records = []
        self.found[reference] = records
        return records


def _when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def _zone(profile: Profile) -> tzinfo:
    if profile.timezone:
        from zoneinfo import ZoneInfo

        return ZoneInfo(profile.timezone)
    return UTC


def reconcile(profile: Profile, request: ReconRequest, *,
              progress: Callable[[], None] | None = None) -> ReconResult:
    """Compare the profile's history and the named journals with the gateway (see the
    module's docstring); ``progress`` is called once per order looked up."""
    from walletctl.config.dburl import DbUrl
    from walletctl.history import history_location, open_location
    from walletctl.ops.batch.lookup import Report

    where = history_location(profile)
    shared = isinstance(where, DbUrl)
    named = where.display() if isinstance(where, DbUrl) else str(where)
    store: HistoryStore | None = None
    if shared or (isinstance(where, Path) and where.exists()):
        store = open_location(where, create=False, purpose="walletctl recon")
    elif request.record:
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
        if request.refs_file is not None:
            plan.extra.update(read_refs(request.refs_file))
        result = ReconResult(
            profile=profile.name, merchant_id=profile.merchant_id, store_id=profile.store_id,
            history=named, backend="postgresql" if shared else "sqlite",
            journals=[str(p) for p in request.journals], since=request.since,
            until=request.until, operations=sorted(request.operations), report=Report())
        result.counts.not_compared = plan.not_compared
        asyncio.run(_look_up(profile, request, plan, desk, result, progress))
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
    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.models.records import parse_timestamp

    since, until, zone = _when(request.since), _when(request.until), _zone(profile)

    def in_window(rec: TransactionRecord) -> bool:
        when = (parse_timestamp(rec.transaction_date_time, zone)
                if rec.transaction_date_time else None)
        if when is None or until is None:
            return True  # a record the gateway does not date is always compared
        return (since is None or when >= since) and when < until

    client = AsyncGatewayClient(profile, max_connections=request.lookup.concurrency)
    keeping = _Keeping(client)
    engine = BalanceReport(keeping, request.lookup)
    result.report = engine.report
    originals = plan.originals()
    result.counts.originals = len(originals)
    try:
        with stopped_by_signals(engine.stop):
            async for row in engine.rows((n, ref, "") for n, ref in enumerate(originals, 1)):
                if progress is not None:
                    progress()
                expected = plan.expected.get(row.ref, [])
                records = keeping.found.pop(row.ref, None)
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
                    operations=request.operations, totals=result.totals, counts=result.counts))
    finally:
        await client.aclose()
