"""``walletctl lookup --batch FILE|-``: balance reports on the batch engine.

Not a command module: ``cli/lookup.py`` calls :func:`run_lookup_batch` with its options.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from walletctl.constants import ExitCode
from walletctl.errors import UsageError
from walletctl.ops.batch.flow import check_flow_options, stop_code, stopped_by_signals

if TYPE_CHECKING:
    from walletctl.ops.batch.balance_report import Report

_DURATION = re.compile(r"(\d{1,6})([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str) -> timedelta:
    """``6d``, ``12h``, ``90m``, ``2w``, ``30s``."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise UsageError("--older-than: must be a number and a unit (s, m, h, d, w), e.g. 6d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def run_lookup_batch(
    ctx: typer.Context,
    *,
    source: Path,
    open_only: bool,
    older_than: str | None,
    states: list[str] | None,
    concurrency: int,
    rate: float | None,
    max_failures: int,
) -> int:
    from walletctl.cli.state import get_state
    from walletctl.ops.batch.balance_report import (
        BalanceReport,
        Filters,
        LookupOptions,
        iter_refs,
    )
    from walletctl.ops.batch.input_rows import batch_input
    from walletctl.render.balances import BalanceWriter, finish_report, lookup_progress

    check_flow_options(concurrency, rate, max_failures)
    filters = Filters(
        open_only=open_only,
        older_than=parse_age(older_than) if older_than else None,
        states=frozenset(s.strip().lower() for s in states or () if s.strip()),
        now=datetime.now(UTC),
    )
    st = get_state(ctx)
    profile = st.profile()
    fmt = st.output_format
    with tempfile.TemporaryDirectory(prefix="walletctl-") as scratch:
        path, name = batch_input(source, Path(scratch))
        writer = BalanceWriter(fmt, title=f"Balances of the references in {name}")
        options = LookupOptions(concurrency=concurrency, rate=rate, max_failures=max_failures)

        async def main() -> Report:
            from walletctl.client.aio import AsyncGatewayClient

            client = AsyncGatewayClient(profile, max_connections=concurrency)
            engine = BalanceReport(client, options)
            progress, update = lookup_progress(fmt)
            try:
                with stopped_by_signals(engine.stop):
                    if progress is not None:
                        progress.start()
                    async for row in engine.rows(iter_refs(path)):
                        update()
                        if filters.keep(row):
                            engine.report.add(row)
                            writer.write(row)
            finally:
                if progress is not None:
                    progress.stop()
                await client.aclose()
            return engine.report

        report = asyncio.run(main())
    finish_report(writer, report)
    stopped = stop_code(report)
    if stopped is not None:
        return stopped
    if report.errors:  # the report is complete, but some references have no balance
        return int(ExitCode.DECLINED)
    return int(ExitCode.OK)
