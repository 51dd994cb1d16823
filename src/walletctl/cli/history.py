"""``walletctl history``: the audit log of money-moving actions (list, reconcile the
unknown outcomes, verify and anchor the hash chain, check an evidence bundle, set up, the
desk's policy); ``walletctl approve ID`` and ``walletctl approvals [show|refuse]``: four
eyes (see docs/history.md "Approvals")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.common import (
    confirm,
    confirm_production,
    make_client,
    parse_when,
    production_tag,
)
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import ENV, State, get_state
from walletctl.constants import Env, ExitCode
from walletctl.errors import UnknownOutcomeError, UsageError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.models.entries import Filters
    from walletctl.ops.desk import Approval
    from walletctl.ops.lookups import Listing

history_app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=False)


def register(app: typer.Typer) -> None:
    app.add_typer(history_app, name="history", help=COMMANDS["history"][1])
    app.command("approve", help=COMMANDS["approve"][1])(approve)
    app.add_typer(approvals_app, name="approvals", help=COMMANDS["approvals"][1])


def _profile_or_none(st: State) -> Profile | None:
    import os

    from walletctl.config.profiles_file import config_path
    from walletctl.ops.profile_view import profile_or_none

    return profile_or_none(st.profile_name or os.environ.get(Env.PROFILE),
                           config_path(st.config_path), st.profile)


@history_app.callback(invoke_without_command=True)
def history(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option(help="From this date/time (UTC) or duration ago (7d, 12h).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Before this date/time or duration ago.")
    ] = None,
    ref: Annotated[str | None, typer.Option(help="Original or new reference.")] = None,
    op: Annotated[
        str | None, typer.Option(help="checkout, capture, refund, reverse, authorize, smoke.")
    ] = None,
    profile: Annotated[str | None, typer.Option(help="Profile the action used.")] = None,
    user: Annotated[str | None, typer.Option(
        help="Operator: the database role (a shared history), else the OS user.")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(help="approved, created (checkouts), declined, refused, unknown or error."),
    ] = None,
    unknown: Annotated[
        bool, typer.Option("--unknown", help="Only entries whose outcome is unknown.")
    ] = False,
    reconcile: Annotated[
        bool,
        typer.Option("--reconcile", help="Look the listed unknown entries up and record them."),
    ] = False,
    last: Annotated[
        int | None, typer.Option(min=1, help="Only the last N entries (table default: 50).")
    ] = None,
    path: Annotated[
        bool, typer.Option(
            "--path", help="Print where the history is (a file, or a database URL) and exit.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from dataclasses import replace

    from walletctl.models.entries import Filters
    from walletctl.ops.lookups import history_where, open_listing
    from walletctl.render.history import render_entries, render_listing, render_location

    st = get_state(ctx)
    if path:
        render_location(history_where(_profile_or_none(st)))
        return
    filters = _filters(since=since, until=until, ref=ref, operation=op, profile=profile,
                       os_user=user, outcome="unknown" if unknown else outcome, limit=last,
                       reconcile=reconcile, clash=unknown and outcome not in (None, "unknown"))
    with open_listing(_profile_or_none(st)) as listing:
        if not listing.exists:
            render_entries([], st.output_format, path=listing.where)
            return
        if reconcile:
            _reconcile(st, listing, filters)
            return
        render_listing(st.output_format,
                       lambda limit: listing.entries(replace(filters, limit=limit or last)),
                       None if filters == Filters(limit=filters.limit) else (
                           lambda: listing.count(filters)), path=listing.where, last=last)


def _filters(*, since: str | None, until: str | None, outcome: str | None, reconcile: bool,
             clash: bool, **given: Any) -> Filters:
    """The listing's filters from the options (checked: usage errors, exit 2)."""
    from walletctl.models.entries import OUTCOMES, Filters

    if clash:
        raise UsageError("--unknown and --outcome name different outcomes")
    if outcome is not None and outcome not in OUTCOMES:
        raise UsageError(f"--outcome: must be one of {', '.join(OUTCOMES)}")
    if reconcile and outcome != "unknown":
        raise UsageError("--reconcile works on unknown entries: add --unknown")
    return Filters(since=parse_when(since, "--since") if since else None,
                   until=parse_when(until, "--until") if until else None,
                   outcome=outcome, **given)


def _reconcile(st: State, listing: Listing, filters: Filters) -> None:
    from walletctl.render.history import render_reconciled

    results = listing.reconcile(filters, selected=st.profile, connect=lambda name: (
        make_client(State(profile_name=name, config_path=st.config_path, timeout=st.timeout,
                          verbose=st.verbose))))
    render_reconciled(st.output_format, results)
    left = sum(1 for r in results if r.outcome == "unknown")
    if left:
        err = UnknownOutcomeError(f"{left} of {len(results)} entries", "not settled")
        err.hint = ("each line above says why; run `walletctl history --unknown --reconcile` "
                    "again later, or check the references with `walletctl lookup REF`")
        raise err


@history_app.command("verify")
def verify(
    ctx: typer.Context,
    anchor: Annotated[Path | None, typer.Option(
        "--anchor", "--since-anchor", metavar="FILE",
        help="A file of checkpoints `walletctl history anchor` printed (kept outside the "
             "history): each must still be here with its hash, and its tree a prefix of "
             "today's and of the next line's (consistency proofs); then only the events "
             "after the newest line are walked, so the cost is what was added since.")] = None,
    expect_head: Annotated[str | None, typer.Option(
        "--expect-head", metavar="HASH",
        help="A head hash printed by an earlier verify (12+ hex digits): fail unless that "
             "event is still in the history (detects deleted newest entries).")] = None,
    full: Annotated[bool, typer.Option(
        "--full",
        help="With --anchor: walk the whole chain too (also finds an edit made before the "
             "newest checkpoint that left its hash alone; the cost grows with the "
             "history).")] = False,
    trust_key: Annotated[Path | None, typer.Option(
        "--trust-key", metavar="PUB.pem",
        help="With --anchor: every checkpoint of the file must be signed by this Ed25519 "
             "public key (unsigned or signed by another key: exit 3).")] = None,
) -> None:
    """Check the hash chain and the Merkle tree: exit 0 when intact, 3 naming the first
    problem. With --anchor, each checkpoint's tree must be a prefix of today's and of the
    next checkpoint's (consistency proofs), and only what was added since is walked."""
    from walletctl.ops.evidence import verify as run_verify
    from walletctl.render.history import render_verified

    st = get_state(ctx)
    found = run_verify(_profile_or_none(st), anchors_file=anchor, expect_head=expect_head,
                       full=full, trust_key=trust_key)
    render_verified(st.output_format, found)  # like every command: JSON when piped
    if not found.intact:
        raise typer.Exit(int(ExitCode.CONFIG))  # a history that fails its check


@history_app.command("anchor")
def anchor(
    ctx: typer.Context,
    sign_key: Annotated[Path | None, typer.Option(
        "--sign-key", metavar="KEY.pem",
        help="Sign the checkpoint with this Ed25519 private key (PKCS#8 PEM, as `openssl "
             "genpkey -algorithm ed25519` writes it): the line carries the signature and "
             "the key's id.")] = None,
) -> None:
    """Print the history's checkpoint as one JSON line to keep outside the history: the
    tree's size and root hash, the time, the history's identity (and the chain's head).

    Example (nightly): walletctl history verify --anchor anchors.jsonl && walletctl history
    anchor --sign-key desk.pem >> anchors.jsonl
    """
    from walletctl.ops.evidence import make_anchor
    from walletctl.render.history import render_anchor

    render_anchor(make_anchor(_profile_or_none(get_state(ctx)), sign_key))


@history_app.command("check-evidence")
def check_evidence(
    ctx: typer.Context,
    bundle: Annotated[Path, typer.Argument(
        metavar="FILE", help="A bundle `walletctl order REF --evidence FILE` wrote.")],
    anchor: Annotated[Path | None, typer.Option(
        "--anchor", metavar="FILE",
        help="An anchors file (`walletctl history anchor` lines): the bundle's checkpoint "
             "must be one of its lines.")] = None,
    trust_key: Annotated[Path | None, typer.Option(
        "--trust-key", metavar="PUB.pem",
        help="An Ed25519 public key: the bundle's checkpoint must be signed by it.")] = None,
) -> None:
    """Check an order's evidence bundle offline: no database, no gateway, no profile.

    Each event must be proven (its inclusion proof) to be in the history's tree at the
    bundle's checkpoint; the order is then told from those events only: its entries, the
    balance of its approved movements, its approvals and who decided them, its findings
    and their resolutions. The gateway's records are shown as not covered by the proofs.
    Without --anchor or --trust-key it says "not anchored". Exit 0 when it holds, 3 naming
    the first thing that does not.

    Example: walletctl history check-evidence order-1042.ndjson --trust-key desk.pub.pem
    """
    from walletctl.ops.bundle_reader import check_bundle
    from walletctl.render.history import render_evidence_check

    render_evidence_check(check_bundle(bundle, anchor, trust_key),
                          get_state(ctx).output_format)


@history_app.command("setup")
def setup(
    ctx: typer.Context,
    grant: Annotated[list[str] | None, typer.Option(
        "--grant", metavar="ROLE",
        help="A database role to let in as --role; repeatable.")] = None,
    role: Annotated[str, typer.Option(
        "--role", metavar="KIND",
        help="What the --grant roles may do: operator (move money, file requests), approver "
             "(decide others' requests) or auditor (read only).")] = "operator",
) -> None:
    """Create or upgrade the history's schema (once, by the database's owner).

    Example: WALLETCTL_HISTORY_URL=postgresql://desk_owner@db:5432/desk walletctl history
    setup --grant alice --grant bob; walletctl history setup --grant carol --role approver
    """
    from walletctl.ops.desk import set_up
    from walletctl.render.history import render_setup

    st = get_state(ctx)
    render_setup(st.output_format, set_up(_profile_or_none(st), grant or [], role))


policy_app = typer.Typer(
    help="The desk's rules (approval amounts, limits, required reasons), kept in the history "
         "and changed only by its owner.", rich_markup_mode=None, add_completion=False,
    no_args_is_help=True)
history_app.add_typer(policy_app, name="policy")


@policy_app.command("show")
def policy_show(ctx: typer.Context) -> None:
    """List the desk's rules kept in the history (who set each, and when)."""
    from walletctl.ops.desk import show_policy
    from walletctl.render.history import render_rulebook

    st = get_state(ctx)
    render_rulebook(st.output_format, show_policy(_profile_or_none(st)))


@policy_app.command("set")
def policy_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="approvals.OP[.CUR], limits.OP[.CUR], "
                                            "require_reason, duplicate_window, approval_hours")],
    value: Annotated[str, typer.Argument(help="An amount, true or a list of operations, or "
                                              "a number of minutes or hours.")],
) -> None:
    """Set one of the desk's rules (the owner only); recorded in the history's chain.

    Example: walletctl history policy set approvals.refund 100.00
    """
    from walletctl.ops.desk import change_policy
    from walletctl.render.history import render_rulebook

    st = get_state(ctx)
    render_rulebook(st.output_format, change_policy(_profile_or_none(st), key, value))


@policy_app.command("unset")
def policy_unset(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The rule to remove.")],
) -> None:
    """Remove one of the desk's rules (the owner only); recorded in the history's chain."""
    from walletctl.ops.desk import change_policy
    from walletctl.render.history import render_rulebook

    st = get_state(ctx)
    render_rulebook(st.output_format, change_policy(_profile_or_none(st), key, None))


# --------------------------------------------------------------------------- four eyes

approvals_app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=False)

_ID = typer.Argument(min=1, help="The request's id (printed when it was filed).")


@approvals_app.callback(invoke_without_command=True)
def approvals(
    ctx: typer.Context,
    state: Annotated[str | None, typer.Option(
        help="pending, approved, refused, spent or expired.")] = None,
    since: Annotated[str | None, typer.Option(
        help="Filed from this date/time (UTC) or duration ago (7d, 12h).")] = None,
    every_merchant: Annotated[bool, typer.Option(
        "--every-merchant", help="Also other merchants' and stores' requests.")] = False,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Print each new request as it is filed, one line each, until "
                        "Ctrl-C (exit 130).")] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from walletctl.ops.desk import list_requests, watch_requests
    from walletctl.render.approvals import render_approvals, render_watched

    st = get_state(ctx)
    if watch:
        if state is not None or since is not None:
            raise UsageError("--watch shows requests as they are filed: it takes no "
                             "--state or --since")
        with watch_requests(st.profile(), every_merchant=every_merchant) as listed:
            render_watched(st.output_format, listed.found, where=listed.where)
        return
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
    from walletctl.models.inputs import clean_reason
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
                action=f"{verb} of #{found.id}", doing="record")

    done = decide(profile, approval, approve=approve, reason=checked_reason, confirm=ask)
    render_decided(st.output_format, done)
