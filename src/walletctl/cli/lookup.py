"""``walletctl lookup``: every transaction record sharing a merchant reference, or with
``--batch FILE|-`` a balance report of many on the batch engine; ``walletctl order REF``:
one order as the gateway and the history each tell it (exit 13 naming each
disagreement)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from walletctl.cli.common import (
    LookupConcurrency,
    LookupFailures,
    Rate,
    duration,
    make_client,
    missing,
)
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import get_state
from walletctl.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("lookup")(lookup)
    app.command("order", help=COMMANDS["order"][1])(order)


def lookup(
    ctx: typer.Context,
    ref: Annotated[
        str | None,
        typer.Argument(help="The merchant reference (clientSystemTransactionId)."),
    ] = None,
    batch: Annotated[Path | None, typer.Option(
        help="File of references (CSV with a ref column, one per line, or JSONL); '-' for "
             "stdin: one balance row per reference.")] = None,
    open_only: Annotated[bool, typer.Option(
        "--open", help="Only approved pre-authorisations with something left to capture.")
    ] = False,
    older_than: Annotated[str | None, typer.Option(
        help="Only references whose first transaction is older, e.g. 6d, 12h.")] = None,
    state: Annotated[list[str] | None, typer.Option(help="Only this state (repeatable).")] = None,
    concurrency: LookupConcurrency = 32,
    rate: Rate = None,
    max_failures: LookupFailures = 10,
) -> None:
    """Show the transaction and its follow-ups (spec 2.5) as a table, JSON, NDJSON or CSV."""
    st = get_state(ctx)
    if batch is not None:  # a balance row per reference, on the batch engine
        if ref is not None:
            raise UsageError("--batch takes its references from the file; drop REF")
        from datetime import UTC, datetime

        from walletctl.ops.batch.balance_report import Filters, LookupOptions
        from walletctl.ops.batch.flow import check_flow_options
        from walletctl.ops.lookups import balance_report
        from walletctl.render.balances import BalanceWriter, lookup_progress

        check_flow_options(concurrency, rate, max_failures)
        filters = Filters(
            open_only=open_only, older_than=_age(older_than) if older_than else None,
            states=frozenset(s.strip().lower() for s in state or () if s.strip()),
            now=datetime.now(UTC))
        writer = BalanceWriter(st.output_format)
        report, code = balance_report(
            st.profile(), batch, filters,
            LookupOptions(concurrency=concurrency, rate=rate, max_failures=max_failures),
            writer=writer.start, progress=lambda: lookup_progress(fmt=writer.fmt))
        writer.finish(report)
        raise typer.Exit(code)
    if ref is None:
        raise missing("lookup", "REF", "--batch FILE")
    from walletctl.models.inputs import check_inputs
    from walletctl.render.records import render_records

    check_inputs(references={"REF": ref})  # the request model's rule, before any lookup
    from walletctl.errors import GatewayError
    from walletctl.ops.lookups import absent_reference

    with make_client(st) as client:
        try:
            records = client.lookup(ref)
        except GatewayError as exc:
            if exc.status != 404:
                raise
            raise absent_reference(st.profile(), ref, exc) from None
    render_records(records, st.output_format, ref)


def _age(text: str) -> timedelta:
    age = duration(text)
    if age is None:
        raise UsageError("--older-than: must be a number and a unit (s, m, h, d, w), e.g. 6d")
    return age


def order(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(
        help="The order's merchant reference: the checkout's, or a follow-up's (REF-REF1: "
             "its original's order is shown).")],
    evidence: Annotated[Path | None, typer.Option(
        "--evidence", metavar="FILE",
        help="Also write the order's evidence bundle (NDJSON) to FILE: the order's own "
             "events, each with its inclusion proof to one checkpoint of the history's "
             "Merkle tree, and the gateway's records; `walletctl history check-evidence "
             "FILE` checks it offline.")] = None,
    anchor: Annotated[Path | None, typer.Option(
        "--anchor", metavar="FILE",
        help="With --evidence: prove the events to the newest checkpoint of this anchors "
             "file (`walletctl history anchor` lines) at or after the order's last event.")
    ] = None,
) -> None:
    from walletctl.models.inputs import check_inputs
    from walletctl.ops.order import order_view
    from walletctl.render.order import render_order

    check_inputs(references={"REF": ref})  # the rule lookup and the money commands apply
    if anchor is not None and evidence is None:
        raise UsageError("--anchor: goes with --evidence FILE (the bundle it ends)")
    from walletctl.ops.user_files import check_output

    check_output(evidence, "--evidence")
    st = get_state(ctx)
    with make_client(st) as client:
        if evidence is None:
            view, written = order_view(st.profile(), client, ref), None
        else:
            from walletctl.ops.evidence import order_with_evidence

            view, written = order_with_evidence(st.profile(), client, ref, evidence, anchor)
    render_order(view, st.output_format, written)
    raise typer.Exit(view.exit_code)
