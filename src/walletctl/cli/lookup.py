"""``walletctl lookup``: every transaction record sharing a merchant reference."""

from __future__ import annotations

from typing import Annotated

import typer

from walletctl.cli.state import get_state


def register(app: typer.Typer) -> None:
    app.command("lookup")(lookup)


def lookup(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The merchant reference (clientSystemTransactionId).")],
) -> None:
    """Show the transaction and its follow-ups (spec 2.5) as a table, JSON, NDJSON or CSV."""
    from walletctl.cli.common import make_client
    from walletctl.render.records import render_records

    st = get_state(ctx)
    with make_client(st) as client:
        records = client.lookup(ref)
    render_records(records, st.output_format, ref)
