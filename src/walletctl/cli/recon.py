"""``walletctl recon``: the history (and batch journals) against lookups at the gateway;
the exit code is the result's own rule (0 agree, 13 mismatch, 6/7/9 lookups not answered,
130 interrupted)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from walletctl.cli.common import LookupConcurrency, LookupFailures, Rate, parse_when
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import get_state
from walletctl.errors import UsageError
from walletctl.models.operations import HISTORY_NAMES

recon_app = typer.Typer(no_args_is_help=False)
OPEN_AGE = "180d"  # recon --open: an order with an entry this recent may still move money


def register(app: typer.Typer) -> None:
    app.add_typer(recon_app, name="recon", help=COMMANDS["recon"][1])


@recon_app.callback(invoke_without_command=True)
def recon(
    ctx: typer.Context,
    since: Annotated[str | None, typer.Option(
        help="From this date/time (UTC unless zoned) or duration ago (7d, 12h). Default: 1d; "
             "with --ref, no lower bound.")] = None,
    until: Annotated[str | None, typer.Option(
        help="Before this date/time or duration ago. Default: now.")] = None,
    ref: Annotated[list[str] | None, typer.Option(
        "--ref", metavar="REF",
        help="Only this order (repeatable); looked up even when the history has nothing "
             "on it.")] = None,
    refs: Annotated[Path | None, typer.Option(
        "--refs", metavar="FILE",
        help="More orders to look up: CSV with a ref column, one reference a line, or JSON "
             "Lines (e.g. a shop's order export).")] = None,
    journal: Annotated[list[Path] | None, typer.Option(
        "--journal", metavar="FILE",
        help="A capture/refund/reverse --batch journal to compare too (repeatable).")] = None,
    op: Annotated[list[str] | None, typer.Option(
        "--op", metavar="OP",
        help=f"Only this operation (repeatable): {', '.join(HISTORY_NAMES)}. "
             "Default: all.")] = None,
    concurrency: LookupConcurrency = 32,
    rate: Rate = None,
    max_failures: LookupFailures = 10,
    record: Annotated[bool, typer.Option(
        "--record", help="File each mismatch not yet on file as a finding in the history "
                         "(an entry of its chain), to be resolved with `recon resolve`.")
    ] = False,
    open_orders: Annotated[bool, typer.Option(
        "--open", help="Also look up every order the history has an entry on from the last "
                       "--open-age up to now, whatever --since and --until say, and report "
                       "any movement at the gateway the history lacks (money moved off the "
                       "desk); one dated outside the window is listed apart, not in the "
                       "totals.")] = False,
    open_age: Annotated[str, typer.Option(
        "--open-age", metavar="AGE",
        help="With --open: how far back an order counts as open (a duration: 180d).")
    ] = OPEN_AGE,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from walletctl.models.inputs import check_inputs
    from walletctl.ops.batch.balance_report import LookupOptions
    from walletctl.ops.batch.flow import check_flow_options
    from walletctl.ops.recon.compare import OPERATIONS
    from walletctl.ops.recon.run import ReconRequest, reconcile
    from walletctl.render.balances import lookup_progress
    from walletctl.render.recon import render_recon

    check_flow_options(concurrency, rate, max_failures)
    frm, to = _window(since, until, every_time=bool(ref))
    for value in ref or ():  # the rule lookup and the money commands apply: exit 4
        check_inputs(references={"--ref": value})
    for name in op or ():
        if name not in OPERATIONS:
            raise UsageError(f"--op {name[:40]!r}: must be one of {', '.join(OPERATIONS)}")
    opened = _open_since(open_age) if open_orders else None
    request = ReconRequest(
        until=to, since=frm, refs=tuple(dict.fromkeys(ref or ())), refs_file=refs,
        open_since=opened,
        journals=tuple(journal or ()), operations=frozenset(op or OPERATIONS),
        lookup=LookupOptions(concurrency=concurrency, rate=rate, max_failures=max_failures),
        record=record)
    st = get_state(ctx)
    profile = st.profile()
    with lookup_progress("orders") as tick:
        result = reconcile(profile, request, progress=tick)
    render_recon(result, st.output_format)
    raise typer.Exit(result.exit_code)


def _window(since: str | None, until: str | None, every_time: bool) -> tuple[str | None, str]:
    """(--since, --until) as stored: until now and, unless ``every_time``, from 1d ago."""
    now = datetime.now(UTC)
    to = parse_when(until or now.isoformat(), "--until", now)
    frm = parse_when(since or "1d", "--since", now) if since or not every_time else None
    if frm is not None and frm >= to:
        raise UsageError(f"--since: must be before --until ({frm} is not before {to})")
    return frm, to


def _open_since(age: str) -> str:
    """``--open-age`` as the history's time: a duration ago (``180d``) or a date."""
    return parse_when(age, "--open-age", datetime.now(UTC))


@recon_app.command("findings")
def findings(
    ctx: typer.Context,
    open_only: Annotated[bool, typer.Option(
        "--open", help="Only the open ones (not resolved).")] = False,
    state: Annotated[str | None, typer.Option(
        help="Only findings in this state: open or resolved.")] = None,
) -> None:
    """List the findings `recon --record` filed in the history, oldest first.

    Each with its number, what was found, who recorded it and, once resolved, who resolved
    it, when, and the note. Reads only.

    Example: walletctl -p desk recon findings --open
    """
    from walletctl.ops.recon.on_file import listing
    from walletctl.render.recon import render_findings

    st = get_state(ctx)
    render_findings(listing(st.profile(), state="open" if open_only else state),
                    st.output_format)


@recon_app.command("resolve")
def resolve(
    ctx: typer.Context,
    finding: Annotated[int, typer.Argument(
        metavar="ID", help="The finding's number (recon findings lists them).")],
    note: Annotated[str, typer.Option(
        "--note", help="What was decided (required; kept in the history).")],
) -> None:
    """Close an open finding with a note: by an approver or the history's owner, never by
    whoever made the movement it is about, nor (money moved with no desk entry) by whoever
    recorded it (enforced by the database on PostgreSQL).

    The resolution is an entry of the history's chain; recon shows the finding with its
    note from then on and no longer reports it as new. Exit 5 when refused.

    Example: walletctl -p desk recon resolve 12 --note "refund made in the dashboard, ticket 4411"
    """
    from walletctl.models.plain import checked_plain
    from walletctl.ops.recon.on_file import resolve as resolve_finding
    from walletctl.render.recon import render_resolved

    checked_plain("--note", note)  # before anything is opened (exit 4)
    st = get_state(ctx)
    render_resolved(resolve_finding(st.profile(), finding, note), st.output_format)
