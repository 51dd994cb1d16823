"""``walletctl checkout``: create a redirect-wallet checkout and print its redirectUrl."""

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
    make_client,
    print_dry_run,
    production_tag,
    read_request_file,
    terminal_prompt,
)
from walletctl.cli.state import get_state
from walletctl.errors import RequestValidationError
from walletctl.render.console import print_note

if TYPE_CHECKING:
    from walletctl.ops.money.movements import Created


def register(app: typer.Typer) -> None:
    app.command("checkout", no_args_is_help=False)(checkout)


def checkout(
    ctx: typer.Context,
    amount: Amount = None,
    currency: Currency = None,
    ref: Annotated[
        str | None, typer.Option("--ref", help="Your unique reference (clientSystemTransactionId).")
    ] = None,
    type_: Annotated[
        str | None, typer.Option("--type", help="sale or preauth (default: sale).")
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from-file",
            help="JSON or TOML request (spec 2.1, amounts in major units; '-' "
            "for stdin). Flags override it.",
        ),
    ] = None,
    first_name: str | None = None,
    last_name: str | None = None,
    email: str | None = None,
    mobile_phone: Annotated[
        str | None, typer.Option(help="{cc}-{number}, e.g. 49-1701234567.")
    ] = None,
    house_number: str | None = None,
    street: str | None = None,
    city: str | None = None,
    zip_code: Annotated[str | None, typer.Option("--zip")] = None,
    state: Annotated[str | None, typer.Option(help="ISO 3166-2, e.g. DE-BY.")] = None,
    country: Annotated[str | None, typer.Option(help="ISO 3166 alpha-3, e.g. DEU.")] = None,
    success_url: str | None = None,
    error_url: str | None = None,
    pending_url: str | None = None,
    return_url: str | None = None,
    cancel_url: str | None = None,
    refused_url: str | None = None,
    redirect_timeout: Annotated[
        int | None, typer.Option(help="Seconds the redirect link lives (0-900, 0 = never).")
    ] = None,
    language: Annotated[str | None, typer.Option(help="Checkout page language.")] = None,
    order_number: Annotated[
        str | None, typer.Option(help="providerDiscretionaryData (your order number).")
    ] = None,
    reason: Reason = None,
    confirm_amount: ConfirmAmount = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the redirect URL in a browser.")
    ] = False,
    dry_run: DryRun = False,
) -> None:
    """Create a checkout (spec 2.1) and print the redirect URL for the customer."""
    from walletctl.models.checkout import parse_checkout_type
    from walletctl.models.inputs import check_inputs, clean_reason
    from walletctl.ops.redirect import checkout_request

    check_inputs(references={"--ref (clientSystemTransactionId)": ref},
                 amounts={"--amount": amount},
                 currencies={"--currency": currency})
    checked_reason = clean_reason(reason)
    st = get_state(ctx)
    base = read_request_file(from_file) if from_file is not None else None
    overrides: dict[str, Any] = {
        "amount": amount,
        "currencyCode": currency.upper() if currency else None,
        "clientSystemTransactionId": ref,
        "providerDiscretionaryData": order_number,
        "checkoutDetails.cardholderFirstName": first_name,
        "checkoutDetails.cardholderLastName": last_name,
        "checkoutDetails.cardholderEmail": email,
        "checkoutDetails.cardholderMobilePhone": mobile_phone,
        "checkoutDetails.redirectUrlTimeout": redirect_timeout,
        "checkoutDetails.language": language,
        "addressDetails.billingAddress.houseNumber": house_number,
        "addressDetails.billingAddress.street": street,
        "addressDetails.billingAddress.city": city,
        "addressDetails.billingAddress.zipPostalCode": zip_code,
        "addressDetails.billingAddress.state": state,
        "addressDetails.billingAddress.countryCode": country,
        "redirectDetails.successUrl": success_url,
        "redirectDetails.errorUrl": error_url,
        "redirectDetails.pendingUrl": pending_url,
        "redirectDetails.returnUrl": return_url,
        "redirectDetails.cancelUrl": cancel_url,
        "redirectDetails.refusedUrl": refused_url,
    }
    if type_ is not None:
        try:
            overrides["type"] = parse_checkout_type(type_)
        except ValueError as exc:
            raise RequestValidationError([("--type", str(exc))]) from None
    elif base is None or not any(k.lower() == "type" for k in base):
        overrides["type"] = "ecom.sale"
    profile, request = checkout_request(st.profile, base, overrides, from_file=from_file)
    client = make_client(st)
    call = client.prepare_checkout(request)
    if dry_run:
        print_dry_run(st, [call])
        return
    from walletctl.ops.desk import recording_history
    from walletctl.ops.money.movements import Checkout
    from walletctl.ops.money.pipeline import Ask, Desk, move
    from walletctl.render.followup import render_waiting, render_warning

    ref_ = request.client_system_transaction_id
    ask = Ask(op="checkout", ref=ref_, reason=checked_reason, confirm_amount=confirm_amount)
    desk: Desk[Any] = Desk(confirm=lambda _plan: None, ask_amount=terminal_prompt(),
                           on_wait=render_waiting, warn=render_warning)
    with client:
        moved = move(client, recording_history(profile, f"checkout {ref_}"),
                     Checkout(request), ask, desk)
    if moved.answer is None:
        from walletctl.render.checkout import render_existing

        render_existing(st.output_format, ref_, moved)
        return
    from walletctl.render.checkout import render_checkout

    created = moved.answer
    render_checkout(st.output_format, request, created, tag=production_tag(profile))
    if open_browser:
        _open_in_browser(created)


def _open_in_browser(created: Created) -> None:
    """``--open``: the redirect URL in a browser, while it still leads somewhere."""
    from walletctl.render.checkout import WAITING

    url = created.response.redirect_url
    if created.replayed and created.state != WAITING:
        print_note("not opening the redirectUrl: the checkout already existed and no longer "
                   "waits for the customer")
    elif not url.lower().startswith(("http://", "https://")):
        # the URL comes from the gateway: never hand file:, javascript: ... to a browser
        print_note("not opening the redirectUrl: it is not an http(s) URL")
    else:
        import webbrowser

        webbrowser.open(url)
