"""``walletctl approve ID`` and ``walletctl approvals [show|refuse]``: four eyes (see
docs/history.md "Approvals")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from walletctl.cli.common import confirm, confirm_production, parse_when, production_tag
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import ENV, get_state

if TYPE_CHECKING:
    from walletctl.history.approvals import Approval

approvals_app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=False)

_ID = typer.Argument(min=1, help="The request's id (printed when it was filed).")


def register(app: typer.Typer) -> None:
    app.command("approve", help=COMMANDS["approve"][1])(approve)
    app.add_typer(approvals_app, name="approvals", help=COMMANDS["approvals"][1])


@approvals_app.callback(invoke_without_command=True)
def approvals(
    ctx: typer.Context,
    state: Annotated[str | None, typer.Option(
        help="pending, approved, refused, spent or expired.")] = None,
    since: Annotated[str | None, typer.Option(
        help="Filed from this date/time (UTC) or duration ago (7d, 12h).")] = None,
    every_merchant: Annotated[bool, typer.Option(
        "--every-merchant", help="Also other merchants' and stores' requests.")] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from walletctl.ops.desk import list_requests
    from walletctl.render.approvals import render_approvals

    st = get_state(ctx)
    with list_requests(st.profile(), state=state,
                       since=None if since is None else parse_when(since, "--since"),
                       every_merchant=every_merchant) as listed:
        render_approvals(st.output_format, listed.found, listed.now, where=listed.where)


@approvals_app.command("show")
def show(ctx: typer.Context, approval: Annotated[int, _ID]) -> None:
    """Show one request in full: the exact movement (or batch file) and its state."""
    from walletctl.ops.desk import show as show_request
    from walletctl.render.approvals import render_request

    st = get_state(ctx)
    found, now = show_request(st.profile(), approval)
    render_request(st.output_format, found, now)


@approvals_app.command("refuse")
def refuse(
    ctx: typer.Context,
    approval: Annotated[int, _ID],
    reason: Annotated[str, typer.Option(help="Why (recorded; the requester sees it).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Refuse another operator's request: it can then never be sent."""
    _decide(ctx, approval, approve=False, reason=reason, yes=yes)


def approve(
    ctx: typer.Context,
    approval: Annotated[int, _ID],
    reason: Annotated[str | None, typer.Option(help="A note recorded with the approval.")] = None,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Do not ask (scripts): the request is still checked.")] = False,
    confirm_profile: Annotated[str | None, typer.Option(
        help="The profile's name, required to approve against a production profile "
        "without a terminal (on one it is typed).")] = None,
) -> None:
    _decide(ctx, approval, approve=True, reason=reason, yes=yes,
            confirm_profile=confirm_profile)


def _decide(ctx: typer.Context, approval: int, *, approve: bool, reason: str | None,
            yes: bool, confirm_profile: str | None = None) -> None:
    from walletctl.history.policy import clean_reason
    from walletctl.ops.desk import decide
    from walletctl.render.approvals import render_decided, render_request

    st = get_state(ctx)
    checked_reason = clean_reason(reason)
    profile = st.profile()
    verb = "approval" if approve else "refusal"

    def ask(found: Approval, now: str) -> None:
        if ENV.is_interactive() and (not yes or (approve and profile.is_production)):
            render_request("table", found, now)  # in full, before the approver is asked
        # a production profile's name, typed, replaces the y/N
        if approve and confirm_production(profile, confirm_profile,
                                          action=f"approve #{found.id} ({found.what()})"):
            return
        confirm(f"{production_tag(profile)}{'Approve' if approve else 'Refuse'} "
                f"#{found.id}: {found.requester}'s {found.what()}", yes=yes,
                action=f"{verb} of #{found.id}")

    done = decide(profile, approval, approve=approve, reason=checked_reason, confirm=ask)
    render_decided(st.output_format, done)
