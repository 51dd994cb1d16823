"""``walletctl sandbox approve|decline|cancel|reset|ledger|faults|seed``: drive a running
sandbox through its admin routes (``/_sandbox/*``, with the admin token when it has one).

The sandbox is the one at ``--url``, else the selected profile's gateway (a production
profile is refused: these commands act on a sandbox only).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from walletctl.cli.sandbox_common import URL_HELP, base_url, call
from walletctl.cli.state import command_line, get_state
from walletctl.constants import Env
from walletctl.errors import WalletctlError


def register(app: typer.Typer) -> None:
    """Add the admin commands to ``walletctl sandbox``."""
    for name, command in (("approve", approve_cmd), ("decline", decline_cmd),
                          ("cancel", cancel_cmd), ("reset", reset_cmd),
                          ("ledger", ledger_cmd), ("faults", faults_cmd), ("seed", seed_cmd)):
        app.command(name)(command)


# -- headless control ----------------------------------------------------------------------

_ADMIN_HELP = ("The sandbox's admin token (X-Sandbox-Token), needed when it serves on a "
               "non-loopback host.")
AdminToken = Annotated[
    str | None,
    typer.Option("--admin-token", help=_ADMIN_HELP, envvar=Env.SANDBOX_TOKEN,
                 show_default=False),
]


def _emit(ctx: typer.Context, data: Any, line: str) -> None:
    from walletctl.render.sandbox import render_record

    render_record(data, get_state(ctx).output_format, line)


def _amount_format(ctx: typer.Context, url: str | None, base: str) -> str:
    """The sandbox's wire amount format: the profile's, or (with --url) its health route's."""
    if not url:
        return get_state(ctx).profile().amount_format
    try:
        return str(call("GET", f"{base}/_sandbox/health").get("amountFormat") or "minor")
    except WalletctlError:
        return "minor"


def _decide(ctx: typer.Context, ref: str, action: str, url: str | None,
            token: str | None) -> None:
    from urllib.parse import quote

    from walletctl.models.inputs import check_inputs

    check_inputs(references={"REF": ref})  # the rule every command applies: exit 4
    base, params = base_url(ctx, url, action)
    data = call("POST", f"{base}/_sandbox/checkouts/{quote(ref, safe='')}/{action}",
                 params=params, token=token)
    if get_state(ctx).output_format != "table" and isinstance(data, dict):
        from walletctl.render.sandbox import decision_with_major_amount

        data = decision_with_major_amount(data, _amount_format(ctx, url, base))
    _emit(ctx, data, f"{data.get('reference', ref)}: {data.get('state')} "
                     f"({data.get('providerStateCode')}) -> {data.get('redirectUrl')}")


def approve_cmd(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The checkout's clientSystemTransactionId.")],
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Approve a pending checkout, as the customer would on the hosted page."""
    _decide(ctx, ref, "approve", url, admin_token)


def decline_cmd(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The checkout's clientSystemTransactionId.")],
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Decline a pending checkout (state Declined)."""
    _decide(ctx, ref, "decline", url, admin_token)


def cancel_cmd(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(help="The checkout's clientSystemTransactionId.")],
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Cancel a pending checkout (state Cancelled)."""
    _decide(ctx, ref, "cancel", url, admin_token)


def reset_cmd(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Delete every transaction and issued key of a running sandbox."""
    base, _ = base_url(ctx, url, "reset")
    data = call("POST", f"{base}/_sandbox/reset", token=admin_token)
    _emit(ctx, data, f"sandbox at {base} reset")


def ledger_cmd(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """List every transaction a running sandbox holds."""
    base, _ = base_url(ctx, url, "ledger")
    data = call("GET", f"{base}/_sandbox/ledger", token=admin_token)
    from walletctl.render.sandbox import render_ledger

    render_ledger(data if isinstance(data, dict) else {}, get_state(ctx).output_format, base)


# -- faults ----------------------------------------------------------------------------------

_FAULT_PANEL = "Faults to set (the others stay as they are; --clear first resets them all)"


def faults_cmd(
    ctx: typer.Context,
    latency: Annotated[int | None, typer.Option(
        "--latency", help="Added latency, ms.", min=0, max=10_000,
        rich_help_panel=_FAULT_PANEL)] = None,
    jitter: Annotated[int | None, typer.Option(
        "--jitter", help="± jitter on the latency, ms.", min=0, max=10_000,
        rich_help_panel=_FAULT_PANEL)] = None,
    error_rate: Annotated[float | None, typer.Option(
        "--error-rate", help="Rate of 5xx before commit (0-1).", min=0.0, max=1.0,
        rich_help_panel=_FAULT_PANEL)] = None,
    error_status: Annotated[int | None, typer.Option(
        "--error-status", help="The 5xx status to answer.", min=500, max=599,
        rich_help_panel=_FAULT_PANEL)
    ] = None,
    throttle_rate: Annotated[float | None, typer.Option(
        "--throttle-rate", help="Rate of 429 answers (0-1).", min=0.0, max=1.0,
        rich_help_panel=_FAULT_PANEL)
    ] = None,
    retry_after: Annotated[int | None, typer.Option(
        "--retry-after", help="Retry-After seconds on 429.", min=0, max=60,
        rich_help_panel=_FAULT_PANEL)
    ] = None,
    drop_rate: Annotated[float | None, typer.Option(
        "--drop-rate", help="Rate of commit-then-drop-the-connection (0-1).",
        min=0.0, max=1.0,
        rich_help_panel=_FAULT_PANEL)] = None,
    error_after_rate: Annotated[float | None, typer.Option(
        "--error-after-rate", help="Rate of 5xx after commit (0-1).", min=0.0, max=1.0,
        rich_help_panel=_FAULT_PANEL)] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Seed for reproducible faults.", rich_help_panel=_FAULT_PANEL)] = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Remove every fault (then apply the options given, if any).")] = False,
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Show, set or clear a running sandbox's faults (for /api/v5 routes; loopback only).

    Without options it shows them; each option sets one fault and keeps the others;
    --clear removes them all.
    """
    from walletctl.ops.sandbox_admin import update_faults
    from walletctl.render.sandbox import render_faults

    base, _ = base_url(ctx, url, "faults")
    given = {"latency_ms": latency, "jitter_ms": jitter, "error_rate": error_rate,
             "error_status": error_status, "throttle_rate": throttle_rate,
             "retry_after": retry_after, "drop_rate": drop_rate,
             "error_after_rate": error_after_rate, "seed": seed}
    changes = {key: value for key, value in given.items() if value is not None}
    data = update_faults(base, changes, clear=clear, token=admin_token)
    render_faults(data, get_state(ctx).output_format, base)


# -- seed ------------------------------------------------------------------------------------


def seed_cmd(
    ctx: typer.Context,
    count: Annotated[int, typer.Argument(help="How many transactions (1-100000).",
                                         min=1, max=100_000)],
    kind: Annotated[str, typer.Option(
        "--kind", help="preauth (for capture/reverse --batch) or sale (for refund --batch).")
    ] = "preauth",
    amount: Annotated[str, typer.Option(
        "--amount", help="Every amount (12.50) or a range (5.00-50.00; drawn at random, never "
        "a magic value ending in 01-05).")] = "1.00-100.00",
    currency: Annotated[str | None, typer.Option(
        "--currency", help="ISO 4217 (default: the profile's, else EUR).")] = None,
    ref: Annotated[str, typer.Option(
        "--ref", help="Reference pattern: {n} is the number from 1 (e.g. seed-{n:04}), {run} "
        "six hex characters new on each run.")] = "seed-{run}-{n:05}",
    csv_path: Annotated[str, typer.Option(
        "--csv", help="Write ref,amount,currency here (- for stdout): the input of "
        "`walletctl capture --batch`.")] = "seed.csv",
    merchant_id: Annotated[str | None, typer.Option(
        "--merchant-id", help="merchantId (default: the profile's).")] = None,
    store_id: Annotated[str | None, typer.Option(
        "--store-id", help="storeId (default: the profile's).")] = None,
    random_seed: Annotated[int | None, typer.Option(
        "--random-seed", help="Seed of the amounts drawn from a range (same seed, same "
        "amounts).")] = None,
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    admin_token: AdminToken = None,
) -> None:
    """Create COUNT approved pre-authorisations (or sales) in a running sandbox at once, and
    write them as a CSV ready for `walletctl capture --batch` (refund --batch for sales)."""
    from walletctl.errors import UsageError
    from walletctl.models.money import check_currency
    from walletctl.ops.sandbox_admin import (
        SeedPlan,
        check_pattern,
        new_run_id,
        parse_amounts,
    )
    from walletctl.ops.sandbox_admin import seed as seed_transactions
    from walletctl.render.sandbox import render_seed

    if kind not in ("preauth", "sale"):
        raise UsageError("--kind: must be preauth or sale")
    check_pattern(ref)
    base, params = base_url(ctx, url, "seed")
    state = get_state(ctx)
    profile = None if url else state.profile()
    merchant = merchant_id or params.get("merchantId")
    shop = store_id or params.get("storeId")
    if not merchant or not shop:
        raise UsageError("--merchant-id and --store-id: required with --url (or select a "
                         "profile instead of --url)")
    try:
        code = check_currency((currency or (profile and profile.currency) or "EUR").upper())
    except ValueError as exc:
        raise UsageError(f"--currency: {exc}") from None
    low, high = parse_amounts(amount, code)
    plan = SeedPlan(count=count, kind=kind, currency=code, merchant_id=merchant,
                    store_id=shop, low=low, high=high, pattern=ref, run=new_run_id(),
                    random_seed=random_seed)
    result = seed_transactions(base, plan, csv_path, token=admin_token)
    op = "capture" if kind == "preauth" else "refund"
    render_seed(result, state.output_format, base,
                next_step=command_line(state, op, "--batch", csv_path))
