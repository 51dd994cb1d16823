"""``walletctl profile add``: one command makes a profile that every command can use.

Every profile setting has a flag; on a terminal the required ids that are missing are asked
for (the userId is also the public key service's user, and where its secret is comes next),
then the default currency and the shop URL (empty: none) when not given (a secret never
is: it would have to be typed into argv or a prompt's scrollback, so its *source* is
recorded instead). With no id given and a walletctl sandbox at the URL (its health route
answers), the profile is the sandbox's own: its ids, currency, redirects, key and public
key service secret (documented test values).
Without a terminal, missing required flags are a usage error naming them; a profile saved
without a currency or redirect URLs gets a note saying what that means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from walletctl.cli.state import ENV, command_line, get_state

_REDIRECTS = "Redirect defaults for checkout (redirectDetails)"
_AUTH = "Credentials (sources only: a secret is never taken from the command line)"


def _ask_ids(missing: list[tuple[str, str]]) -> dict[str, str]:
    """Prompt (stderr) for the required ids that were not given; refuse without a terminal."""
    from walletctl.errors import UsageError

    if not ENV.is_interactive():
        flags = ", ".join(f"--{k.replace('_', '-')}" for k, _ in missing)
        raise UsageError(f"profile add: missing {flags}",
                         hint="pass them, or run `walletctl profile add NAME` on a terminal "
                              "to be asked")
    return {key: typer.prompt(f"{label} (--{key.replace('_', '-')})", err=True).strip()
            for key, label in missing}


def _ask_currency() -> str | None:
    """On a terminal, the default currency (re-asked until it is an ISO 4217 code; empty:
    none). Without one: None, and a note says what that means."""
    if not ENV.is_interactive():
        return None

    def code(text: str) -> str:
        import click

        from walletctl.models.money import check_currency

        if not text.strip():
            return ""
        try:
            return check_currency(text.strip().upper())
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    answer: str = typer.prompt("Default currency, e.g. EUR (--currency; empty: none)",
                               default="", show_default=False, value_proc=code, err=True)
    return answer or None


def _ask_shop() -> str | None:
    if not ENV.is_interactive():
        return None
    shop = typer.prompt("Shop URL for checkout's redirects (--redirect-base; empty: none)",
                        default="", show_default=False, err=True).strip()
    return str(shop) or None


def _ask_service_secret_env() -> str | None:
    """On a terminal, after the service user: where its secret is (an environment
    variable's name, never the secret itself; empty: the API secret is sent as it)."""
    if not ENV.is_interactive():
        return None
    answer = typer.prompt("The service user's secret: the environment variable holding it "
                          "(--service-secret-env; empty: the API secret)",
                          default="", show_default=False, err=True).strip()
    return str(answer) or None


def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile name (letters, digits, '-', '_').")],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Gateway base URL (asked on a terminal when missing).")] = None,
    merchant_id: Annotated[str | None, typer.Option("--merchant-id", help="merchantId.")] = None,
    store_id: Annotated[str | None, typer.Option("--store-id", help="storeId.")] = None,
    user_id: Annotated[str | None, typer.Option(
        "--user-id", help="userId (service user; the Basic user of the public key service).")
    ] = None,
    *,
    amount_format: Annotated[
        str, typer.Option("--amount-format", help="Wire format of amounts: minor | decimal.")
    ] = "minor",
    currency: Annotated[
        str | None, typer.Option(
            "--currency", help="Default ISO 4217 currency (asked on a terminal when missing).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Request timeout in seconds.")
    ] = None,
    timezone: Annotated[str | None, typer.Option(
        "--timezone", help="IANA zone of the gateway's timestamps, e.g. Europe/Paris.")] = None,
    environment: Annotated[str | None, typer.Option(
        "--environment", help="production | test (default): a production profile's "
        "confirmations say PRODUCTION, its batches need its name typed or --confirm-profile, "
        "sandbox commands refuse it.")] = None,
    auth_scheme: Annotated[str, typer.Option(
        "--auth-scheme", help="PublicApiKey | Bearer | Basic | header | none.",
        rich_help_panel=_AUTH)] = "PublicApiKey",
    header: Annotated[str | None, typer.Option(
        "--header", help="Header name for --auth-scheme header.", rich_help_panel=_AUTH)] = None,
    username: Annotated[str | None, typer.Option(
        "--username", help="Basic auth user (default: --user-id).", rich_help_panel=_AUTH)] = None,
    key_env: Annotated[str | None, typer.Option(
        "--key-env", help="Read the API key from this environment variable.",
        rich_help_panel=_AUTH)] = None,
    key_file: Annotated[Path | None, typer.Option(
        "--key-file", help="Read the API key from this file (must be 0600).",
        rich_help_panel=_AUTH)] = None,
    keyring: Annotated[bool, typer.Option(
        "--keyring", help="Read the API key from the system keyring.",
        rich_help_panel=_AUTH)] = False,
    service_secret_env: Annotated[str | None, typer.Option(
        "--service-secret-env", help="Public key service secret (walletctl keys) from this "
        "environment variable (default: the API key).", rich_help_panel=_AUTH)] = None,
    service_secret_file: Annotated[Path | None, typer.Option(
        "--service-secret-file", help="Public key service secret from this file (0600).",
        rich_help_panel=_AUTH)] = None,
    redirect_base: Annotated[str | None, typer.Option(
        "--redirect-base", help="Shop URL: sets success_url=URL/ok, error_url=URL/error, "
        "pending_url=URL/pending, return_url=URL/cart.", rich_help_panel=_REDIRECTS)] = None,
    success_url: Annotated[str | None, typer.Option(
        "--success-url", help="Payment successful.", rich_help_panel=_REDIRECTS)] = None,
    error_url: Annotated[str | None, typer.Option(
        "--error-url", help="Payment unsuccessful.", rich_help_panel=_REDIRECTS)] = None,
    pending_url: Annotated[str | None, typer.Option(
        "--pending-url", help="Payment pending.", rich_help_panel=_REDIRECTS)] = None,
    return_url: Annotated[str | None, typer.Option(
        "--return-url", help="Customer goes back to the shop.", rich_help_panel=_REDIRECTS)
    ] = None,
    cancel_url: Annotated[str | None, typer.Option(
        "--cancel-url", help="Cancelled (default: the error URL).", rich_help_panel=_REDIRECTS)
    ] = None,
    refused_url: Annotated[str | None, typer.Option(
        "--refused-url", help="Refused (default: the error URL).", rich_help_panel=_REDIRECTS)
    ] = None,
    path: Annotated[list[str] | None, typer.Option(
        "--path", help="Path override KEY=/path (repeatable), e.g. checkout=/api/v6/checkout.")
    ] = None,
    default: Annotated[
        bool, typer.Option("--default", help="Make it the default profile.")
    ] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing profile whole: the settings not given here are "
        "reset, and named (`profile set` changes one setting).")] = False,
) -> None:
    """Add a profile to the profiles file (created 0600 if missing; comments are kept).

    With no --key-env/--key-file/--keyring the key is read from $WALLETCTL_<NAME>_KEY.
    Inline keys are not taken from flags (they would land in your shell history).
    """
    from walletctl.config.profiles_file import config_path
    from walletctl.ops.new_profile import NewProfile, Prompts, add_new_profile
    from walletctl.render.profiles import render_added

    state = get_state(ctx)
    ask = NewProfile(
        name=name, ids={"base_url": base_url, "merchant_id": merchant_id, "store_id": store_id,
                        "user_id": user_id},
        amount_format=amount_format, currency=currency, timeout=timeout, timezone=timezone,
        environment=environment, auth_scheme=auth_scheme, header=header, username=username,
        key_env=key_env, key_file=key_file, keyring=keyring,
        service_secret_env=service_secret_env, service_secret_file=service_secret_file,
        redirect_base=redirect_base,
        redirects={"success_url": success_url, "error_url": error_url,
                   "pending_url": pending_url, "return_url": return_url,
                   "cancel_url": cancel_url, "refused_url": refused_url},
        paths=path or [], default=default, force=force)
    added = add_new_profile(ask, config_path(state.config_path),
                            Prompts(ids=_ask_ids, currency=_ask_currency, shop=_ask_shop,
                                    service_secret_env=_ask_service_secret_env),
                            suggest=lambda *words: command_line(state, "profile", *words))
    render_added(state.output_format, added)
