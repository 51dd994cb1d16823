"""``walletctl lookup``: every transaction record sharing a merchant reference."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from walletctl.cli.state import get_state

_BATCH = "Balance report (--batch)"


def register(app: typer.Typer) -> None:
    app.command("lookup")(lookup)


def lookup(
    ctx: typer.Context,
    ref: Annotated[
        str | None,
        typer.Argument(help="The merchant reference (clientSystemTransactionId)."),
    ] = None,
    batch: Annotated[
        Path | None,
        typer.Option(help="File of references (CSV with a ref column, one per line, or JSONL); "
                     "'-' for stdin: one balance row per reference.", rich_help_panel=_BATCH),
    ] = None,
    open_only: Annotated[
        bool, typer.Option("--open", help="Only approved pre-authorisations with something "
                           "left to capture.", rich_help_panel=_BATCH),
    ] = False,
    older_than: Annotated[
        str | None, typer.Option(help="Only references whose first transaction is older, "
                                 "e.g. 6d, 12h.", rich_help_panel=_BATCH),
    ] = None,
    state: Annotated[
        list[str] | None, typer.Option(help="Only this state (repeatable).",
                                       rich_help_panel=_BATCH),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, max=512, help="Lookups in flight.", rich_help_panel=_BATCH)
    ] = 32,
    rate: Annotated[
        float | None,
        typer.Option(min=0.01, help="Max requests per second.", rich_help_panel=_BATCH),
    ] = None,
    max_failures: Annotated[
        int, typer.Option(min=1, help="Stop after K consecutive failed lookups.",
                          rich_help_panel=_BATCH)
    ] = 10,
) -> None:
    """Show the transaction and its follow-ups (spec 2.5) as a table, JSON, NDJSON or CSV."""
    from walletctl.errors import UsageError

    if batch is not None:
        if ref is not None:
            raise UsageError("--batch takes its references from the file; drop REF")
        from walletctl.cli.lookup_batch import run_lookup_batch

        raise typer.Exit(run_lookup_batch(
            ctx, source=batch, open_only=open_only, older_than=older_than, states=state,
            concurrency=concurrency, rate=rate, max_failures=max_failures))
    if ref is None:
        raise UsageError(
            "lookup: missing REF (usage: walletctl lookup [OPTIONS] REF, or --batch FILE)",
            hint="see `walletctl lookup --help`",
        )
    from walletctl.cli.common import make_client
    from walletctl.models.inputs import check_inputs
    from walletctl.render.records import render_records

    check_inputs(references={"REF": ref})  # the request model's rule, before any lookup

    st = get_state(ctx)
    with make_client(st) as client:
        records = client.lookup(ref)
    render_records(records, st.output_format, ref)
