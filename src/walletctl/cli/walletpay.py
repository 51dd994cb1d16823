"""``walletctl keys | account | authorize``: the browser wallet (WalletPay) from a terminal.

* ``keys``: API key + encryption key from the public key service (masked unless
  ``--show-secret``; cached until expiry; ``--save`` stores them in the profile's secret store).
* ``account``: Get Payment Account for a ``transactionAccountId`` (or a posted ``event.detail``).
* ``authorize``: ``ecom.sale`` / ``ecom.preauthorization`` on a payment account. A ``Card``
  (PAN_ONLY) account without 3DS data, or a ``Token`` account without cryptogram/ECI, is
  refused before sending (exit code 4, VALIDATION).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.state import get_state

if TYPE_CHECKING:
    from walletctl.models.walletpay import PaymentAccount

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
    from walletctl.cli.common import make_client
    from walletctl.masking import mask_secret
    from walletctl.ops.walletpay import get_keys

    state = get_state(ctx)
    with make_client(state) as client:
        result = get_keys(client, refresh=refresh, save=save)
    k = result.keys
    api_key = k.api_key.get_secret_value()
    enc_key = k.encryption_key.get_secret_value()
    row: dict[str, Any] = {
        "profile": state.profile().name,
        "apiKey": api_key if show_secret else mask_secret(api_key),
        "encryptionKey": enc_key if show_secret else mask_secret(enc_key),
        "encryptionKeyId": k.encryption_key_id,
        "expiresAt": k.expires_at,
        "source": result.source,
    }
    if result.saved:
        row["saved"] = list(result.saved)
    _emit(state.output_format, row, "Public keys")
    if result.cache_error:
        from walletctl.render.console import print_note

        print_note(f"warning: {result.cache_error}")
    if result.saved_key_loses_to:  # saved, yet not what the next command sends (still exit 0)
        from walletctl.render.console import print_note

        print_note(_loses_to(state.profile().name, result.saved_key_loses_to))


def account(
    ctx: typer.Context,
    transaction_account_id: Annotated[
        str | None, typer.Argument(help="The transactionAccountId from event.detail.")
    ] = None,
    event: Annotated[Path | None, typer.Option("--event", help=_EVENT_HELP)] = None,
    encryption_key_id: Annotated[
        str | None, typer.Option("--encryption-key-id", help=_KEY_ID_HELP)
    ] = None,
) -> None:
    """Show a payment account (Get Payment Account), card number masked."""
    from walletctl.cli.common import make_client
    from walletctl.ops.walletpay import get_account, read_event, resolve_key_id

    state = get_state(ctx)
    account_id = _account_id(transaction_account_id, event, read_event)
    key_id = resolve_key_id(state.profile(), encryption_key_id)
    with make_client(state) as client:
        acct = get_account(client, account_id, key_id)
    _emit(state.output_format, _account_row(acct), "Payment account")


def authorize(
    ctx: typer.Context,
    account_id: Annotated[
        str | None, typer.Option("--account", help="The transactionAccountId to charge.")
    ] = None,
    event: Annotated[Path | None, typer.Option("--event", help=_EVENT_HELP + " Supplies the "
                                               "account, cryptogram, ECI and default --ref.")
                     ] = None,
    amount: Annotated[str | None, typer.Option(help="Amount in major units, e.g. 12.34.")] = None,
    currency: Annotated[
        str | None, typer.Option(help="ISO 4217 code (default: the profile's currency).")
    ] = None,
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
    encryption_key_id: Annotated[
        str | None, typer.Option("--encryption-key-id", help=_KEY_ID_HELP)
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the exact request; send nothing.")
    ] = False,
) -> None:
    """Authorize (sale or pre-authorization) a payment account from the browser wallet."""
    from walletctl.cli.common import confirm, make_client, missing_options, print_dry_run
    from walletctl.constants import ExitCode
    from walletctl.errors import RequestValidationError, UsageError
    from walletctl.models.money import check_currency, format_major, parse_major
    from walletctl.ops.walletpay import (
        build_authorization,
        get_account,
        prepare_authorization,
        read_event,
        read_three_ds,
        resolve_key_id,
        send_authorization,
    )

    state = get_state(ctx)
    if event is not None and three_ds is not None and str(event) == str(three_ds) == "-":
        raise UsageError("--event - and --3ds - cannot both read stdin")
    detail = read_event(event) if event is not None else None
    if detail is not None and account_id and account_id != detail.transaction_account_id:
        raise UsageError("--account differs from the event's transactionAccountId")
    tds = read_three_ds(three_ds) if three_ds is not None else None
    acct_id = account_id or (detail.transaction_account_id if detail else None)
    if tds is not None and tds.account_id is not None:
        if acct_id and acct_id != tds.account_id:
            raise UsageError("--3ds was run for another account than "
                             + ("--account" if account_id else "the event's"),
                             hint="run `walletctl sandbox 3ds` for the account you charge")
        acct_id = tds.account_id
    reference = ref or (detail.client_system_transaction_id if detail else None)
    if not (acct_id and reference and amount):
        raise missing_options("authorize", [(flag, rule) for flag, rule, value in (
            ("--account", "required: the transactionAccountId, or --event FILE or --3ds FILE "
                          "naming it", acct_id),
            ("--ref", "required: the new transaction's clientSystemTransactionId", reference),
            ("--amount", "required: the amount in major units, e.g. 12.34", amount),
        ) if not value])
    from walletctl.models.inputs import check_inputs

    check_inputs(references={"--ref (clientSystemTransactionId)": reference},
                 amounts={"--amount": amount},
                 currencies={"--currency": currency})
    profile = state.profile()
    if not (currency or profile.currency):
        raise missing_options(
            "authorize", [("--currency", f"required: profile {profile.name!r} has no default "
                                         "currency")],
            hint=f'pass --currency EUR, or set currency = "EUR" under [profiles.{profile.name}]')
    try:
        cur = check_currency(currency or profile.currency or "")
    except ValueError as exc:
        raise RequestValidationError([("--currency", str(exc))]) from None
    try:
        value = parse_major(amount, cur)
    except ValueError as exc:
        raise RequestValidationError([("--amount", str(exc))]) from None
    if value <= 0:
        raise RequestValidationError([("--amount", "must be greater than zero")])
    key_id = resolve_key_id(profile, encryption_key_id)
    from contextlib import nullcontext

    from walletctl.history import open_for, recording
    from walletctl.ops.money.lock import hold_original, lock_key

    store = None if dry_run else open_for(profile, purpose=f"walletctl authorize {reference}")
    # the money protocol's lock: one movement at a time on this transaction, on this machine
    # and (a shared history) at the desk
    hold = nullcontext() if dry_run else hold_original(
        store, lock_key(profile.merchant_id, profile.store_id, reference), what=reference)
    with hold, make_client(state) as client, \
            recording(store, profile, "authorize", reference) as rec:
        rec.planned(reference, value, cur)
        acct = get_account(client, acct_id, key_id)
        req = build_authorization(
            profile, acct, amount=value, currency=cur, reference=reference, kind=kind,
            key_id=key_id,
            cryptogram=cryptogram or (detail.cryptogram if detail else None),
            eci=eci or (detail.eci_indicator if detail else None),
            three_ds=tds.three_ds if tds is not None else None,
        )
        call = prepare_authorization(client, req)
        if dry_run:
            print_dry_run(state, [call])
            return
        from walletctl.cli.production import production_tag

        confirm(f"{production_tag(profile)}{req.type} of {format_major(value, cur)} on "
                f"{acct.card_type} account "
                f"{acct.masked_card_number or acct_id} (ref {reference})",
                yes=yes, action="authorization")
        rec.sending()
        resp = send_authorization(client, call, req)
        rec.answered(resp.state)
    row: dict[str, Any] = {
        "id": resp.id, "state": resp.state, "providerStateCode": resp.provider_state_code,
        "type": resp.type or req.type,
        "amount": f"{resp.amount if resp.amount is not None else value:f}",
        "currencyCode": resp.currency_code or cur,
        "clientSystemTransactionId": resp.client_system_transaction_id or reference,
        "transactionAccountId": acct_id, "cardType": acct.card_type,
    }
    _emit(state.output_format, row, "Authorization")
    if resp.state == "Pending":  # accepted, not done: an outcome still to look up
        from walletctl.errors import UnknownOutcomeError

        raise UnknownOutcomeError(reference, "the gateway answered Pending: not done yet")
    if resp.state != "Approved":
        from walletctl.render.console import print_error

        print_error(f"authorization {reference} was not approved: {resp.state}"
                    + (f" ({resp.provider_state_code})" if resp.provider_state_code else ""))
        raise typer.Exit(int(ExitCode.DECLINED))


# -- helpers ---------------------------------------------------------------------------------


def _loses_to(profile: str, source: str) -> str:
    """The one line ``keys --save`` prints when the profile's own key still wins."""
    setting = ("key" if source == "inline key" else "key_env" if source.startswith("env ")
               else "key_file" if source.startswith("file ") else "keyring")
    return (f"warning: the saved API key is not used: profile {profile}'s {source} "
            f"(auth.{setting}) wins; remove {setting} from [profiles.{profile}.auth] to use "
            "the saved one")


def _account_id(arg: str | None, event: Path | None, read_event: Any) -> str:
    from walletctl.errors import UsageError

    if arg and event is not None:
        raise UsageError("give TRANSACTION_ACCOUNT_ID or --event, not both")
    if event is not None:
        return str(read_event(event).transaction_account_id)
    if not arg:
        raise UsageError("account: missing TRANSACTION_ACCOUNT_ID (usage: walletctl account "
                         "[OPTIONS] TRANSACTION_ACCOUNT_ID, or --event FILE)",
                         hint="see `walletctl account --help`")
    return arg


def _account_row(acct: PaymentAccount) -> dict[str, Any]:
    from walletctl.masking import mask_body

    row: dict[str, Any] = {
        "transactionAccountId": acct.transaction_account_id,
        "cardType": acct.card_type,
        "authMethod": "PAN_ONLY" if acct.card_type == "Card" else "CRYPTOGRAM_3DS",
        "cardNetwork": acct.card_network,
        # re-masked: never trust a gateway to have masked enough
        "maskedCardNumber": _remask(acct.masked_card_number) if acct.masked_card_number
        else None,
        "expiryMonth": acct.expiry_month,
        "expiryYear": acct.expiry_year,
    }
    for key, value in (acct.model_extra or {}).items():
        if key not in row and key.lower() != "authmethod":
            row[key] = value
    masked: dict[str, Any] = mask_body(row)
    return masked


def _remask(text: str) -> str:
    """First 6 / last 4 at most, whatever the gateway sent (never trust it to mask enough)."""
    if len(text) > 10:
        return text[:6] + "*" * (len(text) - 10) + text[-4:]
    return "*" * max(len(text) - 4, 0) + text[-4:]


def _emit(fmt: str, row: dict[str, Any], title: str) -> None:
    from walletctl.render.output import emit

    def table() -> None:
        from rich.table import Table

        from walletctl.render.console import out

        t = Table(title=title, show_header=False, title_justify="left")
        t.add_column("field", style="bold", no_wrap=True)
        t.add_column("value", overflow="fold")  # a key shown with --show-secret stays whole
        for key, value in row.items():
            if value is None:
                continue
            t.add_row(key, "\n".join(value) if isinstance(value, list) else str(value))
        out().print(t)

    emit(fmt, [row], document=row, table=table)
