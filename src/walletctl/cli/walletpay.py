"""``walletctl keys | account | authorize``: the browser wallet (WalletPay) from a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.common import (
    Amount,
    ConfirmAmount,
    Currency,
    DryRun,
    Reason,
    Yes,
    confirm,
    make_client,
    missing,
    print_dry_run,
    production_tag,
    terminal_prompt,
)
from walletctl.cli.state import get_state
from walletctl.errors import UsageError

if TYPE_CHECKING:
    from walletctl.ops.walletpay import AuthorizationPlan

_EVENT_HELP = "A posted event.detail JSON file ('-' for stdin)."
_KEY_ID_HELP = ("Encryption key id the account was made with (default: from the cached "
                "`walletctl keys`).")


def register(app: typer.Typer) -> None:
    app.command("keys")(keys)
    app.command("account", no_args_is_help=True)(account)
    app.command("authorize", no_args_is_help=True)(authorize)


def keys(
    ctx: typer.Context,
    show_secret: Annotated[
        bool, typer.Option("--show-secret", help="Print the keys themselves (default: a "
                                                 "fingerprint).")
    ] = False,
    save: Annotated[
        bool, typer.Option("--save", help="Store the API key and encryption key in the "
                                          "profile's secret store.")
    ] = False,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Ignore the cache: ask the public key service.")
    ] = False,
) -> None:
    """Fetch an API key and encryption key for the profile (public key service)."""
    from walletctl.ops.walletpay import get_keys
    from walletctl.render.walletpay import render_keys

    state = get_state(ctx)
    with make_client(state) as client:
        result = get_keys(client, refresh=refresh, save=save)
    render_keys(state.output_format, state.profile().name, result, show_secret=show_secret)


def account(
    ctx: typer.Context,
    transaction_account_id: Annotated[
        str | None, typer.Argument(help="The transactionAccountId from event.detail.")
    ] = None,
    event: Annotated[Path | None, typer.Option("--event", help=_EVENT_HELP)] = None,
    encryption_key_id: Annotated[str | None, typer.Option(help=_KEY_ID_HELP)] = None,
) -> None:
    """Show a payment account (Get Payment Account), card number masked."""
    from walletctl.ops.walletpay import get_account, read_event, resolve_key_id

    state = get_state(ctx)
    account_id = _account_id(transaction_account_id, event, read_event)
    key_id = resolve_key_id(state.profile(), encryption_key_id)
    with make_client(state) as client:
        acct = get_account(client, account_id, key_id)
    from walletctl.render.walletpay import render_account

    render_account(state.output_format, acct)


def authorize(
    ctx: typer.Context,
    account_id: Annotated[
        str | None, typer.Option("--account", help="The transactionAccountId to charge.")
    ] = None,
    event: Annotated[Path | None, typer.Option("--event", help=_EVENT_HELP + " Supplies the "
                                               "account, cryptogram, ECI and default --ref.")
                     ] = None,
    amount: Amount = None,
    currency: Currency = None,
    ref: Annotated[
        str | None, typer.Option("--ref", help="clientSystemTransactionId (default: the "
                                               "event's).")
    ] = None,
    kind: Annotated[str, typer.Option("--type", help="sale | preauth")] = "sale",
    cryptogram: Annotated[
        str | None, typer.Option(help="Device-token cryptogram (prefer --event: flags are "
                                      "visible to other local users).")
    ] = None,
    eci: Annotated[str | None, typer.Option(help="ECI indicator of the device token.")] = None,
    three_ds: Annotated[
        Path | None, typer.Option("--3ds", "--three-ds", help="3DS result JSON "
                                  "{threeDSServerTransId, authenticationValue, eci} ('-' for "
                                  "stdin), e.g. the output of `walletctl sandbox 3ds`; supplies "
                                  "the account when it names one.")
    ] = None,
    encryption_key_id: Annotated[str | None, typer.Option(help=_KEY_ID_HELP)] = None,
    reason: Reason = None,
    confirm_amount: ConfirmAmount = None,
    yes: Yes = False,
    dry_run: DryRun = False,
) -> None:
    """Authorize (sale or pre-authorization) a payment account from the browser wallet."""
    from walletctl.models.inputs import clean_reason
    from walletctl.models.money import format_major
    from walletctl.ops.desk import recording_history
    from walletctl.ops.money.pipeline import Ask, Desk
    from walletctl.ops.walletpay import AuthorizeInput, authorization_from, authorize
    from walletctl.render.followup import render_waiting, render_warning
    from walletctl.render.walletpay import render_authorization

    state = get_state(ctx)
    movement = authorization_from(state.profile, AuthorizeInput(
        account_id=account_id, event=event, three_ds=three_ds, amount=amount,
        currency=currency, ref=ref, kind=kind, cryptogram=cryptogram, eci=eci,
        encryption_key_id=encryption_key_id))
    checked_reason = clean_reason(reason)
    profile, reference = state.profile(), movement.reference

    def confirm_plan(plan: AuthorizationPlan) -> None:
        acct = plan.account
        confirm(f"{production_tag(profile)}{plan.request.type} of "
                f"{format_major(movement.amount, movement.currency)} on {acct.card_type} "
                f"account {acct.masked_card_number or movement.account_id} (ref {reference})",
                yes=yes, action="authorization")

    ask = Ask(op="authorize", ref=reference, reason=checked_reason,
              confirm_amount=confirm_amount, dry_run=dry_run)
    store = None if dry_run else recording_history(profile, f"authorize {reference}")
    desk = Desk(confirm=confirm_plan, ask_amount=terminal_prompt(), on_wait=render_waiting,
                warn=render_warning)
    with make_client(state) as client:
        moved = authorize(client, store, movement, ask, desk)
    if dry_run and moved.plan is not None:
        print_dry_run(state, [moved.plan.call])
        return
    render_authorization(state.output_format, movement, moved)
    if moved.failure is not None:  # the exit the result carries (5 or 8), with its reason
        raise moved.failure
    raise typer.Exit(moved.exit_code)



def _account_id(arg: str | None, event: Path | None, read_event: Any) -> str:
    if arg and event is not None:
        raise UsageError("give TRANSACTION_ACCOUNT_ID or --event, not both")
    if event is not None:
        return str(read_event(event).transaction_account_id)
    if not arg:
        raise missing("account", "TRANSACTION_ACCOUNT_ID", "--event FILE")
    return arg
