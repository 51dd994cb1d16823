"""``walletctl profile add``: one command makes a profile that every command can use.

Every profile setting has a flag; on a terminal the required ids that are missing are asked
for, then the default currency and the shop URL (empty: none) when not given (a secret never
is: it would have to be typed into argv or a prompt's scrollback, so the key's *source* is
recorded instead). Without a terminal, missing required flags are a usage error naming them;
a profile saved without a currency or redirect URLs gets a note saying what that means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from walletctl.cli.state import ENV, State, command_line, get_state

# Flags of `profile add` by the profile key they set (to report bad values as flag errors).
FLAG_FOR_KEY = {
    "base_url": "--base-url",
    "merchant_id": "--merchant-id",
    "store_id": "--store-id",
    "user_id": "--user-id",
    "amount_format": "--amount-format",
    "currency": "--currency",
    "timeout": "--timeout",
    "timezone": "--timezone",
    "environment": "--environment",
    "auth -> scheme": "--auth-scheme",
    "auth -> header": "--header",
    "auth -> username": "--username",
    "auth -> key_env": "--key-env",
    "auth -> key_file": "--key-file",
    "auth -> service_secret_env": "--service-secret-env",
    "auth -> service_secret_file": "--service-secret-file",
    **{f"redirects -> {k}": f"--{k.replace('_', '-')}" for k in (
        "success_url", "error_url", "pending_url", "return_url", "cancel_url", "refused_url")},
    **{f"paths -> {k}": "--path" for k in (
        "checkout", "apm_transactions", "public_keys", "payment_accounts", "transactions")},
}
# --redirect-base URL fills every redirect URL from one shop address.
REDIRECT_SUFFIXES = {
    "success_url": "/ok",
    "error_url": "/error",
    "pending_url": "/pending",
    "return_url": "/cart",
}
_REDIRECTS = "Redirect defaults for checkout (redirectDetails)"
_AUTH = "Credentials (sources only: a secret is never taken from the command line)"
_REQUIRED = (("base_url", "Gateway base URL"), ("merchant_id", "merchantId"),
             ("store_id", "storeId"), ("user_id", "userId"))


def default_env_name(name: str) -> str:
    import re

    return "WALLETCTL_" + re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") + "_KEY"


def _print_note(message: str) -> None:
    from walletctl.render.console import print_note

    print_note(message)


def _ask_missing(values: dict[str, str | None]) -> dict[str, str]:
    """Prompt (stderr) for the required ids that were not given; refuse without a terminal."""
    from walletctl.errors import UsageError

    missing = [(key, label) for key, label in _REQUIRED if not values.get(key)]
    if missing and not ENV.is_interactive():
        flags = ", ".join(f"--{k.replace('_', '-')}" for k, _ in missing)
        raise UsageError(f"profile add: missing {flags}",
                         hint="pass them, or run `walletctl profile add NAME` on a terminal "
                              "to be asked")
    out = {k: v for k, v in values.items() if v}
    for key, label in missing:
        out[key] = typer.prompt(f"{label} (--{key.replace('_', '-')})", err=True).strip()
    return out


def _ask_currency() -> str | None:
    """On a terminal, the default currency (re-asked until it is an ISO 4217 code; empty:
    none). Without one: None, and ``_after_add`` says what that means."""
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


def _redirects(base: str | None, given: dict[str, str | None]) -> dict[str, str]:
    table: dict[str, str] = {}
    if base:
        root = base.rstrip("/")
        table.update({key: root + suffix for key, suffix in REDIRECT_SUFFIXES.items()})
    table.update({key: value for key, value in given.items() if value})
    return table


def _paths(items: list[str]) -> dict[str, str]:
    from walletctl.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--path {item!r}: must be KEY=/path, e.g. checkout=/api/v5/checkout")
        out[key.strip()] = value.strip()
    return out


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
    from walletctl.config.profiles_file import add_profile, config_path
    from walletctl.errors import ConfigError, UsageError

    state = get_state(ctx)
    sources = [flag for flag, on in (("--key-env", key_env), ("--key-file", key_file),
                                     ("--keyring", keyring)) if on]
    if len(sources) > 1:
        raise UsageError(f"{' and '.join(sources)} are exclusive: pick one secret source")
    table: dict[str, Any] = _ask_missing({"base_url": base_url, "merchant_id": merchant_id,
                                          "store_id": store_id, "user_id": user_id})
    table["amount_format"] = amount_format
    if currency is None:
        currency = _ask_currency()
    if currency is not None:
        table["currency"] = currency.upper()
    if timeout is not None:
        table["timeout"] = int(timeout) if float(timeout).is_integer() else timeout
    if timezone is not None:
        table["timezone"] = timezone
    if environment is not None:
        table["environment"] = environment
    auth: dict[str, Any] = {"scheme": auth_scheme}
    for key, value in (("header", header), ("username", username)):
        if value is not None:
            auth[key] = value
    if key_file is not None:
        auth["key_file"] = str(key_file.expanduser().absolute())
    elif keyring:
        auth["keyring"] = True
    elif key_env is not None:
        auth["key_env"] = key_env
    elif auth_scheme.lower() != "none":
        auth["key_env"] = default_env_name(name)
    if service_secret_env is not None:
        auth["service_secret_env"] = service_secret_env
    if service_secret_file is not None:
        auth["service_secret_file"] = str(service_secret_file.expanduser().absolute())
    table["auth"] = auth
    table["paths"] = _paths(path or [])
    table["redirects"] = _redirects(redirect_base, {
        "success_url": success_url, "error_url": error_url, "pending_url": pending_url,
        "return_url": return_url, "cancel_url": cancel_url, "refused_url": refused_url})
    if not table["redirects"] and ENV.is_interactive():
        shop = typer.prompt("Shop URL for checkout's redirects (--redirect-base; empty: none)",
                            default="", show_default=False, err=True).strip()
        table["redirects"] = _redirects(shop or None, {})

    target = config_path(state.config_path)
    reset = _reset_by_force(target, name, table) if force else []
    try:
        add_profile(target, name, table, make_default=default, replace=force)
    except ConfigError as exc:
        prefix = f"profiles.{name} -> "
        if exc.location and exc.location.startswith(prefix):
            flag = FLAG_FOR_KEY.get(exc.location.removeprefix(prefix))
            if flag:
                rule = exc.message.removeprefix(f"{exc.location}: ")
                raise UsageError(f"{flag}: {rule}") from None
        raise
    notes: list[str] = []
    if reset:
        notes.append(f"--force replaced the whole profile {name!r}: reset "
                     f"{', '.join(reset)} (to change one setting and keep the others: "
                     f"`{command_line(state, 'profile', 'set', name, 'KEY', 'VALUE')}`)")
        _print_note(notes[-1])
    _after_add(name, target, notes, state)
    if state.output_format != "table":
        from walletctl.render.rows import emit_rows

        record = {"profile": name, "file": str(target), "saved": True, "notes": notes,
                  "reset": reset}
        emit_rows([record], state.output_format, document=record)


def _flat(table: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _reset_by_force(target: Path, name: str, table: dict[str, Any]) -> list[str]:
    """The settings of the profile being replaced that --force drops or changes (by key;
    values are not shown: an inline key would be a secret)."""
    from walletctl.config.profiles_file import load_file

    if not target.exists():
        return []
    old = load_file(target).document.get("profiles", {}).get(name)
    if not isinstance(old, dict):
        return []
    before, after = _flat(old), _flat(table)
    return [key for key, value in before.items() if after.get(key, None) != value]


def _after_add(name: str, target: Path, notes: list[str], state: State) -> None:
    """What the new profile can do, and the one step left (if any)."""
    from walletctl.config.profiles_file import file_mode, load_file

    def _note(message: str) -> None:
        notes.append(message)
        _print_note(message)

    saved = load_file(target).profiles[name]
    _note(f"saved {'PRODUCTION ' if saved.is_production else ''}profile {name!r} to {target} "
          "(mode 0600)")
    if saved.is_production:
        _note(f"batches and smoke against {name!r} ask for its name to be typed (without a "
              f"terminal: --confirm-profile {name}); sandbox commands refuse it")
    auth = saved.auth
    if auth.key_env:
        _note(f"the API key is read from ${auth.key_env}: "
              f"`read -rs {auth.key_env} && export {auth.key_env}`")
    elif auth.keyring:
        _note(f"store the API key with `keyring set walletctl {name}`")
    elif auth.key_file is not None:
        if not auth.key_file.exists():
            _note(f"create {auth.key_file} with the API key, readable by you only (chmod 600)")
        elif (mode := file_mode(auth.key_file)) is not None and mode & 0o077:
            _note(f"{auth.key_file} is {mode:04o}: it is refused until "
                  f"`chmod 600 {auth.key_file}`")
    def cmd(*words: str) -> str:
        return "`" + command_line(state, "profile", *words) + "`"

    missing = [k for k in REDIRECT_SUFFIXES if k not in saved.redirects]
    if missing:
        _note("checkout needs redirect URLs (or pass them to checkout): "
              + cmd("set", name, f"redirects.{missing[0]}", "https://your-shop/...")
              + (f", and the same for {', '.join(missing[1:])}" if missing[1:] else ""))
    if saved.currency is None:
        _note("no default currency: checkout and authorize need --currency on each call; "
              + cmd("set", name, "currency", "EUR"))
    if not (auth.service_secret_env or auth.service_secret_file or auth.service_secret):
        _note("`walletctl keys` (and smoke's browser-wallet scenario) send the API key as the "
              "public key service's secret; if the service has its own: "
              + cmd("set", name, "auth.service_secret_env", "VAR"))
    _note(f"{cmd('check', name)} lists what each command needs")
