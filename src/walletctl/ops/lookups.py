"""Orders looked up at the gateway outside a movement: ``lookup --batch``'s balance report,
and ``history --unknown --reconcile`` with a client for each entry's merchant; the history's
entries as ``walletctl history`` lists them (:func:`open_listing`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, GatewayError, WalletctlError

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore
    from walletctl.models.entries import Entry
    from walletctl.models.entries import Filters as EntryFilters
    from walletctl.ops.batch.balance_report import BalanceRow, Filters, LookupOptions, Report
    from walletctl.ops.money.earlier import Reconciled


def balance_report(profile: Profile, source: Path, filters: Filters, options: LookupOptions,
                   *, writer: Callable[[str], Callable[[BalanceRow], Any]],
                   progress: Callable[[], AbstractContextManager[Callable[[], None]]]
                   ) -> tuple[Report, int]:
    """Look up every reference of ``source`` (a file, or ``-``: stdin); each row the
    filters keep goes to ``writer(the input's name)``. (The report, its exit code.)"""
    import asyncio
    import tempfile

    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.ops.batch.balance_report import BalanceReport, iter_refs
    from walletctl.ops.batch.flow import stop_code, stopped_by_signals
    from walletctl.ops.batch.input_rows import batch_input

    with tempfile.TemporaryDirectory(prefix="walletctl-") as scratch:
        path, name = batch_input(source, Path(scratch))
        write = writer(name)

        async def run() -> Report:
            client = AsyncGatewayClient(profile, max_connections=options.concurrency)
            engine = BalanceReport(client, options)
            try:
                with stopped_by_signals(engine.stop), progress() as tick:
                    async for row in engine.rows(iter_refs(path)):
                        tick()
                        if filters.keep(row):
                            engine.report.add(row)
                            write(row)
            finally:
                await client.aclose()
            return engine.report

        report = asyncio.run(run())
    stopped = stop_code(report)
    if stopped is not None:
        return report, stopped
    # complete, but some references have no balance
    return report, int(ExitCode.DECLINED if report.errors else ExitCode.OK)


def history_where(profile: Profile | None) -> str:
    """Where the profile's history is: a file's path, or the database's URL without its
    password (``history --path``)."""
    from walletctl.history import locate

    return locate(profile).where


class Listing:
    """The profile's history as ``walletctl history`` reads it: where it is, and its
    entries (none while the file is not written yet)."""

    def __init__(self, where: str, store: HistoryStore | None) -> None:
        self.where = where
        self._store = store
        self.exists = store is not None

    def entries(self, filters: EntryFilters) -> Iterator[Entry]:
        """The matching entries, oldest first, read as they are iterated."""
        if self._store is not None:
            yield from self._store.entries(filters)

    def count(self, filters: EntryFilters) -> int:
        return 0 if self._store is None else self._store.count(filters)

    def reconcile(self, filters: EntryFilters, *, selected: Callable[[], Profile],
                  connect: Callable[[str], GatewayClient]) -> list[Reconciled]:
        """The matching unknown entries looked up and their outcomes recorded
        (:func:`reconcile_unknown`)."""
        if self._store is None:
            return []
        return reconcile_unknown(self._store, list(self._store.entries(filters)),
                                 selected=selected, connect=connect)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_listing(profile: Profile | None) -> Listing:
    """The profile's history opened to list it (a file not written yet: no entries)."""
    from walletctl.history import open_existing

    found, store = open_existing(profile, "walletctl history")
    return Listing(found.where, store)


def reconcile_unknown(store: HistoryStore, entries: list[Entry], *,
                      selected: Callable[[], Profile],
                      connect: Callable[[str], GatewayClient]) -> list[Reconciled]:
    """Look each entry up with the client (``connect(profile name)``) of its merchant and
    store: its own profile's, else the ``selected`` profile's; how either spells the
    gateway's URL does not matter. An entry written before the history kept merchant ids
    needs its profile at its old URL."""
    from walletctl.ops.money.earlier import reconcile

    clients: dict[str, GatewayClient | str] = {}

    def client_of(name: str) -> GatewayClient | str:
        if name not in clients:
            try:
                clients[name] = connect(name)
            except ConfigError as exc:
                clients[name] = f"profile {name}: {exc.message}"
        return clients[name]

    def client_for(entry: Entry) -> GatewayClient | str:
        names = [entry.profile]
        if entry.merchant_id is not None:
            with contextlib.suppress(ConfigError):
                names.append(selected().name)
        why = f"profile {entry.profile} now points at another gateway"
        for name in dict.fromkeys(names):
            found = client_of(name)
            if isinstance(found, str):
                why = found
                continue
            prof = found.profile
            if entry.merchant_id is None:
                if prof.base_url == entry.base_url:
                    return found
            elif (prof.merchant_id, prof.store_id) == (entry.merchant_id, entry.store_id):
                return found
            else:
                why = (f"no profile for merchant {entry.merchant_id} store {entry.store_id} "
                       "(select one with -p)")
        return why

    try:
        return reconcile(store, entries, client_for)
    finally:
        for c in clients.values():
            if not isinstance(c, str):
                c.close()



def absent_reference(profile: Profile, reference: str, exc: GatewayError) -> GatewayError:
    """A lookup that found nothing (404), with a truer hint when the profile's gateway is a
    walletctl sandbox that started after the history's first entry for ``reference`` there
    and keeps its ledger in memory: the sandbox forgot it, the reference is not wrong."""
    from walletctl.client.admin import HEALTH, SandboxAdmin
    from walletctl.history import locate, open_profile_history
    from walletctl.models.entries import Filters

    if profile.is_production:
        return exc
    try:
        with SandboxAdmin(profile.base_url, timeout=5) as admin:
            answer = admin.send("GET", HEALTH)
        health = answer.json() if answer.status_code == 200 else {}
        started, persistent = health.get("startedAt"), health.get("persistent")
        where = locate(profile)
        if not isinstance(started, str) or persistent or where.backend != "sqlite" \
                or not where.exists:
            return exc
        store = open_profile_history(profile, purpose="walletctl lookup")
        try:
            times = [e.time for e in store.entries(Filters(original_ref=reference))
                     if e.base_url.rstrip("/") == profile.base_url.rstrip("/")]
        finally:
            store.close()
    except (WalletctlError, OSError, ValueError, AttributeError):
        return exc  # no better answer than the gateway's own
    from datetime import datetime

    first = min(times, default=None)
    try:
        if first is None or datetime.fromisoformat(first) >= datetime.fromisoformat(started):
            return exc
    except (ValueError, TypeError):  # a time spelled otherwise: no claim made
        return exc
    exc.hint = (f"this sandbox started at {started}, after the history's first entry for "
                f"{reference} at this address ({first}), and keeps its ledger in memory: it "
                "forgot the reference; serve it with --db FILE to keep its ledger")
    return exc
