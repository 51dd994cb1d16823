"""``walletctl order REF``: one order as the gateway and the history each tell it; exit 0
when they agree (or there is no history to compare), 13 naming each disagreement."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from walletctl.cli.common import make_client
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import get_state
from walletctl.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("order", help=COMMANDS["order"][1])(order)


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
