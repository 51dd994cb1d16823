"""``walletctl order REF``: one order as the gateway and the history each tell it.

The command parses its options, calls :func:`walletctl.ops.order.order_view` and hands the
result to :mod:`walletctl.render.order`; it exits 0 when the history and the gateway agree
(or there is no history to compare), 13 when a disagreement is named (recon's code).
"""

from __future__ import annotations

from pathlib import Path
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
    evidence: Annotated[Path | None, typer.Option(
        "--evidence", metavar="FILE",
        help="Also write the order's evidence bundle (JSON) to FILE: the view, the history's "
             "events up to a head, approvals and findings; `walletctl history "
             "check-evidence FILE` checks it offline.")] = None,
    anchor: Annotated[Path | None, typer.Option(
        "--anchor", metavar="FILE",
        help="With --evidence: end the bundle's chain at the first head of this anchors "
             "file (`walletctl history anchor` lines) at or after the order's last event.")
    ] = None,
) -> None:
    """One order: the gateway's records, the history's entries, approvals, recon findings,
    the balance and a verdict; exit 13 naming each disagreement.

    What happened to this order? One lookup at the gateway (the original and its
    follow-ups, with their states), every history entry on it (operator, reason, outcome,
    approval), every approval request on it, what `recon --ref REF` finds, and the
    balance; it ends in one line: the history and the gateway agree, or each disagreement
    named. Reads only: nothing is sent but the lookup, nothing is written to the history.

    With --evidence FILE it also writes a bundle an auditor checks offline with
    `walletctl history check-evidence FILE [--anchor ANCHORS]`.

    Example: walletctl -p desk order ORDER-1042 --evidence order-1042.json
    """
    from walletctl.cli.common import make_client
    from walletctl.models.inputs import check_inputs
    from walletctl.ops.order import order_view
    from walletctl.render.order import render_order

    check_inputs(references={"REF": ref})  # the rule lookup and the money commands apply
    if anchor is not None and evidence is None:
        from walletctl.errors import UsageError

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
