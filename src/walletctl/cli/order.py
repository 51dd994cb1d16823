"""``walletctl order REF``: one order as the gateway and the history each tell it.

The command parses its options, calls :func:`walletctl.ops.order.order_view` and hands the
result to :mod:`walletctl.render.order`; it exits 0 when the history and the gateway agree
(or there is no history to compare), 13 when a disagreement is named (recon's code).
"""

from __future__ import annotations

from typing import Annotated

import typer

from walletctl.cli.state import get_state

HELP = ("One order: the gateway's records, the history's entries, approvals, recon findings, "
        "the balance and a verdict; exit 13 naming each disagreement.")


def register(app: typer.Typer) -> None:
    app.command("order", help=HELP)(order)


def order(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(
        help="The order's merchant reference (the original checkout's).")],
) -> None:
    """One order: the gateway's records, the history's entries, approvals, recon findings,
    the balance and a verdict; exit 13 naming each disagreement.

    What happened to this order? One lookup at the gateway (the original and its
    follow-ups, with their states), every history entry on it (operator, reason, outcome,
    approval), every approval request on it, what `recon --ref REF` finds, and the
    balance; it ends in one line: the history and the gateway agree, or each disagreement
    named. Reads only: nothing is sent but the lookup, nothing is written.

    Example: walletctl -p desk order ORDER-1042
    """
    from walletctl.cli.common import make_client
    from walletctl.models.inputs import check_inputs
    from walletctl.ops.order import order_view
    from walletctl.render.order import render_order

    check_inputs(references={"REF": ref})  # the rule lookup and the money commands apply
    st = get_state(ctx)
    with make_client(st) as client:
        view = order_view(st.profile(), client, ref)
    render_order(view, st.output_format)
    if view.disagreements and st.output_format != "table":  # a table ends with the verdict
        from walletctl.render.console import print_error

        print_error(f"order: {view.verdict}")
    raise typer.Exit(view.exit_code)
