"""``walletctl profile list|show|add|set|unset|default|remove|check|example``: the profiles file.

``add`` asks on a terminal for the missing required ids, then the currency, the shop URL and
where the service user's secret is (a secret itself never is: its *source* is recorded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from walletctl.cli.common import Yes
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import ENV, State, carry_options, command_line, get_state
from walletctl.errors import ConfigError, UsageError
from walletctl.render.console import print_note

profile_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile", help=COMMANDS["profile"][1])


@profile_app.command("list")
def list_profiles(ctx: typer.Context) -> None:
    """List the profiles (name, base URL, merchant, store, auth, environment; * = default)."""
    from walletctl.config.profiles_file import config_path
    from walletctl.ops.profile_view import profile_rows
    from walletctl.render.profiles import render_profile_list

    state = get_state(ctx)
    path = config_path(state.config_path)
    render_profile_list(state.output_format, profile_rows(path), path)


@profile_app.command("show")
def show(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to show (default: the selected profile).")
    ] = None,
) -> None:
    """Show every setting of a profile; the secret's source is described, never the secret."""
    from walletctl.ops.profile_view import selected_settings
    from walletctl.render.profiles import render_profile

    state = get_state(ctx)
    found, settings = selected_settings(state.config_path, name or state.profile_name)
    render_profile(state.output_format, found, settings)


def _ask_ids(missing: list[tuple[str, str]]) -> dict[str, str]:
    """Prompt (stderr) for the required ids that were not given; refuse without a terminal."""
    if not ENV.is_interactive():
        flags = ", ".join(f"--{k.replace('_', '-')}" for k, _ in missing)
        raise UsageError(f"profile add: missing {flags}",
                         hint="pass them, or run `walletctl profile add NAME` on a terminal "
                              "to be asked")
    return {key: typer.prompt(f"{label} (--{key.replace('_', '-')})", err=True).strip()
            for key, label in missing}


def _currency_code(text: str) -> str:
    """The ISO 4217 code typed (empty: none); anything else is asked again."""
    import click

    from walletctl.models.money import check_currency

    if not text.strip():
        return ""
    try:
        return check_currency(text.strip().upper())
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _ask_optional(question: str,
                  check: Callable[[str], str] | None = None) -> Callable[[], str | None]:
    """A question asked on a terminal (empty: None); without one, None."""
    def ask() -> str | None:
        if not ENV.is_interactive():
            return None
        return str(typer.prompt(question, default="", show_default=False, value_proc=check,
                                err=True)).strip() or None

    return ask


@profile_app.command("add")
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
    timeout: Annotated[float | None, typer.Option(help="Request timeout in seconds.")] = None,
    timezone: Annotated[str | None, typer.Option(
        "--timezone", help="IANA zone of the gateway's timestamps, e.g. Europe/Paris.")] = None,
    environment: Annotated[str | None, typer.Option(
        "--environment", help="production | test (default): a production profile's "
        "confirmations say PRODUCTION, its batches need its name typed or --confirm-profile, "
        "sandbox commands refuse it.")] = None,
    auth_scheme: Annotated[str, typer.Option(
        "--auth-scheme", help="PublicApiKey | Bearer | Basic | header | none.")] = "PublicApiKey",
    header: Annotated[str | None, typer.Option(
        "--header", help="Header name for --auth-scheme header.")] = None,
    username: Annotated[str | None, typer.Option(
        "--username", help="Basic auth user (default: --user-id).")] = None,
    key_env: Annotated[str | None, typer.Option(
        "--key-env", help="Read the API key from this environment variable.")] = None,
    key_file: Annotated[Path | None, typer.Option(
        "--key-file", help="Read the API key from this file (must be 0600).")] = None,
    keyring: Annotated[bool, typer.Option(
        "--keyring", help="Read the API key from the system keyring.")] = False,
    service_secret_env: Annotated[str | None, typer.Option(
        "--service-secret-env", help="Public key service secret (walletctl keys) from this "
        "environment variable (default: the API key).")] = None,
    service_secret_file: Annotated[Path | None, typer.Option(
        "--service-secret-file", help="Public key service secret from this file (0600).")] = None,
    redirect_base: Annotated[str | None, typer.Option(
        "--redirect-base", help="Shop URL: sets success_url=URL/ok, error_url=URL/error, "
        "pending_url=URL/pending, return_url=URL/cart.")] = None,
    success_url: Annotated[str | None, typer.Option(help="Payment successful.")] = None,
    error_url: Annotated[str | None, typer.Option(help="Payment unsuccessful.")] = None,
    pending_url: Annotated[str | None, typer.Option(help="Payment pending.")] = None,
    return_url: Annotated[str | None, typer.Option(help="Customer goes back to the shop.")] = None,
    cancel_url: Annotated[str | None, typer.Option(
        "--cancel-url", help="Cancelled (default: the error URL).")
    ] = None,
    refused_url: Annotated[str | None, typer.Option(
        "--refused-url", help="Refused (default: the error URL).")
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
                            Prompts(ids=_ask_ids,
                                    currency=_ask_optional("Default currency, e.g. EUR "
                                                           "(--currency; empty: none)",
                                                           _currency_code),
                                    shop=_ask_optional("Shop URL for checkout's redirects "
                                                       "(--redirect-base; empty: none)"),
                                    service_secret_env=_ask_optional(
                                        "The service user's secret: the environment variable "
                                        "holding it (--service-secret-env; empty: the API "
                                        "secret)")),
                            suggest=lambda *words: command_line(state, "profile", *words))
    render_added(state.output_format, added)


_KEY_HELP = ("Dotted setting, e.g. currency, timeout, auth.key_env, redirects.success_url, "
             "history.approvals.refund (`walletctl profile example` lists them all).")


def _report(state: State, record: dict[str, Any], line: str) -> None:
    from walletctl.render.profiles import render_saved

    print_note(line)
    render_saved(state.output_format, record)


def _setting(state: State, key: str) -> tuple[Path, str]:
    """(the profiles file, ``key`` dotted as the file spells it)."""
    from walletctl.config.profiles_file import config_path, split_key

    table, leaf = split_key(key)
    return config_path(state.config_path), f"{table}.{leaf}".lstrip(".")


# `profile set NAME timeout -1`: a negative VALUE is a value, not an option
@profile_app.command("set", context_settings={"ignore_unknown_options": True})
def set_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to change.")],
    key: Annotated[str, typer.Argument(help=_KEY_HELP)],
    value: Annotated[str, typer.Argument(help="New value (true/false for keyring and "
                                              "history.enabled; numbers for timeout).")],
) -> None:
    """Set one setting of a profile (validated like loading; comments kept; exit 2 when the
    value breaks a rule, and the file is left unchanged).

    Secrets are never taken inline: set a source (auth.key_env VAR, auth.key_file PATH,
    auth.keyring true); setting one source of a secret removes the profile's other ones.
    """
    from walletctl.config.profiles_file import parse_value, set_value

    state = get_state(ctx)
    path, dotted = _setting(state, key)
    result = set_value(path, name, dotted, parse_value(dotted, value))
    shown = f"; see `{command_line(state, 'profile', 'show', name)}`"
    line = (f"profile {name!r}: {dotted} set ({path})" if result.changed
            else f"profile {name!r}: {dotted} already had this value; nothing changed")
    if result.dropped:
        line += "; removed " + ", ".join(result.dropped) + " (one source per secret)"
    _report(state, {"profile": name, "file": str(path), "key": dotted,
                    "changed": result.changed, "removed": list(result.dropped)},
            line + shown)


@profile_app.command("unset")
def unset_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to change.")],
    key: Annotated[str, typer.Argument(help=_KEY_HELP)],
) -> None:
    """Remove one setting of a profile (back to its default); a required one is refused."""
    from walletctl.config.profile import REQUIRED_PROFILE_KEYS
    from walletctl.config.profiles_file import unset_value

    state = get_state(ctx)
    path, dotted = _setting(state, key)
    if dotted in REQUIRED_PROFILE_KEYS:
        again = command_line(state, "profile", "set", name, dotted, "VALUE")
        raise UsageError(f"{dotted}: required, it cannot be unset",
                         hint=f"change it: `{again}`")
    result = unset_value(path, name, dotted)
    line = (f"profile {name!r}: {dotted} removed ({path})" if result.changed
            else f"profile {name!r}: {dotted} was not set; nothing changed")
    _report(state, {"profile": name, "file": str(path), "key": dotted,
                    "changed": result.changed}, line)


@profile_app.command("default")
def default_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to use when none is selected.")],
) -> None:
    """Make a profile the default (default_profile in the file)."""
    from walletctl.config.profiles_file import config_path, set_default

    state = get_state(ctx)
    path = config_path(state.config_path)
    result = set_default(path, name)
    line = (f"default profile is now {name!r} ({path})" if result.changed
            else f"{name!r} already is the default profile; nothing changed")
    _report(state, {"profile": name, "file": str(path), "default": True,
                    "changed": result.changed}, line)


@profile_app.command("remove")
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to remove.")],
    yes: Yes = False,
) -> None:
    """Remove a profile from the profiles file (asks first on a terminal)."""
    from walletctl.config.profiles_file import config_path, load_file, remove_profile

    state = get_state(ctx)
    path = config_path(state.config_path)
    pf = load_file(path)
    if name not in pf.profiles:
        raise ConfigError(
            f"unknown profile {name!r} in {path}; available: {', '.join(pf.profiles) or 'none'}",
            hint="see `walletctl profile list`",
        )
    if not yes:
        if not ENV.is_interactive():
            raise UsageError(
                f"refusing to remove profile {name!r} without --yes (no terminal to confirm on)"
            )
        if not typer.confirm(f"Remove profile {name!r} from {path}?", default=False, err=True):
            print_note("nothing removed")
            return
    result = remove_profile(path, name)
    _report(state, {"profile": name, "file": str(path), "removed": True,
                    "default_profile": result.file.default_profile},
            f"removed profile {name!r} from {path}")


@profile_app.command("check")
def check(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to check (default: the selected profile).")
    ] = None,
    all_profiles: Annotated[
        bool, typer.Option("--all", help="Check every profile in the file.")
    ] = False,
    online: Annotated[
        bool, typer.Option("--online", help="Also send two read-only requests: a lookup of "
                           "a reference that cannot exist (the API key) and one to the public "
                           "key service (its user and secret).")
    ] = False,
) -> None:
    """Check a profile: file, permissions, secrets, and which commands it can run.

    Prints one line per check (ok / warn / FAIL); exits with the config exit code when one
    fails (with --online: 9 credentials refused, 7 gateway unreachable, 6 gateway failing).
    Nothing is sent unless --online.
    """
    from walletctl.ops.profile_check import check_profiles
    from walletctl.render.profiles import render_checks

    state = get_state(ctx)
    found = check_profiles(state.config_path, name or state.profile_name,
                           every=all_profiles, online=online, transport=ENV.transport,
                           suggest=lambda *words: command_line(state, "profile", *words),
                           carry=lambda hint: carry_options(hint, state))
    render_checks(state.output_format, [asdict(c) for c in found.checks])
    found.raise_failure()


EXAMPLES = ("reference", "sandbox", "production-key-env", "key-file", "keyring")


@profile_app.command("example")
def example(
    kind: Annotated[str, typer.Argument(
        help="reference (every setting) | sandbox | production-key-env | key-file | keyring."
    )] = "reference",
) -> None:
    """Print a commented profiles file (every setting with its default and meaning)."""
    from walletctl import shipped
    from walletctl.render.output import write_text

    if kind not in EXAMPLES:
        raise UsageError(f"profile example: no example {kind!r}",
                         hint="one of: " + ", ".join(EXAMPLES))
    write_text(shipped.read("sample-configs", f"{kind}.toml"))
