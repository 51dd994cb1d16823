"""``walletctl profile list|show|add|set|unset|default|remove|check|example``: the profiles file.

``add`` makes a profile every command can use: every setting has a flag; on a terminal the
missing required ids are asked for, then the currency, the shop URL and where the service
user's secret is (a secret itself never is: its *source* is recorded); with no id given and a
walletctl sandbox at the URL, the profile is the sandbox's own. ``set|unset|default`` edit the
file in place with tomlkit (comments and layout kept), checked with the loader's rules before
it is written. ``check`` is offline by default (the file parses, permissions, each secret is
found, the auth header builds, which commands have what they need); ``--online`` adds two
read-only requests (a lookup of a reference that cannot exist, the public key service's keys).
Heavy imports (Rich tables, tomli-w, pydantic) happen inside the commands only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.state import ENV, State, command_line, get_state

if TYPE_CHECKING:
    from walletctl.config.profile import Profile, ProfilesFile
    from walletctl.errors import WalletctlError

profile_app = typer.Typer(
    help="Manage merchant profiles (the TOML profiles file).",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.add_typer(
        profile_app,
        name="profile",
        help="List, show, add, change, remove and check merchant profiles (profiles.toml).",
    )


# --------------------------------------------------------------------------- output helpers


def _note(message: str) -> None:
    from walletctl.render.console import print_note

    print_note(message)


def _selected_default(pf: ProfilesFile) -> str | None:
    if pf.default_profile:
        return pf.default_profile
    return next(iter(pf.profiles)) if len(pf.profiles) == 1 else None


# --------------------------------------------------------------------------- list


@profile_app.command("list")
def list_profiles(ctx: typer.Context) -> None:
    """List the profiles (name, base URL, merchant, store, auth, environment; * = default)."""
    from walletctl.config.profiles_file import config_path, load_file
    from walletctl.render.profiles import render_profile_list

    state = get_state(ctx)
    path = config_path(state.config_path)
    if not path.exists():
        render_profile_list(state.output_format, None, path)
        return
    pf = load_file(path)
    default = _selected_default(pf)
    rows = [
        {
            "name": p.name,
            "default": p.name == default,
            "base_url": p.base_url,
            "merchant_id": p.merchant_id,
            "store_id": p.store_id,
            "auth": p.auth.scheme,
            "environment": p.environment,
        }
        for p in pf.profiles.values()
    ]
    render_profile_list(state.output_format, rows, path)


# --------------------------------------------------------------------------- show


def _profile_settings(profile: Profile, default: str | None) -> dict[str, Any]:
    """Every setting of ``profile`` for display; secret sources described, never read out."""
    from walletctl.config.profile import REDIRECT_KEYS
    from walletctl.config.secrets import (
        describe_secret_source,
        describe_service_secret_source,
    )
    from walletctl.constants import PATH_KEYS

    auth = profile.auth
    return {
        "name": profile.name,
        "file": str(profile.source) if profile.source else None,
        "default": profile.name == default,
        "base_url": profile.base_url,
        "merchant_id": profile.merchant_id,
        "store_id": profile.store_id,
        "user_id": profile.user_id,
        "amount_format": profile.amount_format,
        "currency": profile.currency,
        "timeout": profile.timeout,
        "timezone": profile.timezone,
        "environment": profile.environment,
        "auth": {
            "scheme": auth.scheme,
            "header": auth.header,
            "username": auth.username,
            "secret": describe_secret_source(profile),
            "service_secret": describe_service_secret_source(profile),
        },
        "paths": {key: profile.path(key) for key in PATH_KEYS},
        "paths_overridden": sorted(profile.paths),
        "redirects": {key: profile.redirects.get(key) for key in REDIRECT_KEYS},
        "history": _history_settings(profile),
    }


def _history_settings(profile: Profile) -> dict[str, Any]:
    """The history's place and the desk's rules (``profile set NAME history.KEY``)."""
    history = profile.history
    return {
        "enabled": history.enabled,
        "path": str(history.path) if history.path else None,
        "url": history.url,  # never holds a password (refused when loaded)
        "require_reason": ", ".join(history.require_reason) or None,
        "limits": dict(history.limits),
        "approvals": dict(history.approvals),
        "approval_hours": history.approval_hours,
        "duplicate_window": history.duplicate_window,
    }


@profile_app.command("show")
def show(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to show (default: the selected profile).")
    ] = None,
) -> None:
    """Show every setting of a profile; the secret's source is described, never the secret."""
    from walletctl.config.profiles_file import config_path, load_file, select_profile
    from walletctl.render.profiles import render_profile

    state = get_state(ctx)
    pf = load_file(config_path(state.config_path))
    profile = select_profile(pf, name or state.profile_name)
    settings = _profile_settings(profile, _selected_default(pf))
    render_profile(state.output_format, profile.name, settings)


# --------------------------------------------------------------------------- add

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


profile_app.command("add")(add)


# --------------------------------------------------------------------------- set, unset, default

_KEY_HELP = ("Dotted setting, e.g. currency, timeout, auth.key_env, redirects.success_url, "
             "history.approvals.refund (`walletctl profile example` lists them all).")


def _report(state: State, record: dict[str, Any], line: str) -> None:
    from walletctl.render.console import print_note
    from walletctl.render.profiles import render_saved

    print_note(line)
    render_saved(state.output_format, record)


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
    from walletctl.config.profiles_file import config_path, parse_value, set_value, split_key

    state = get_state(ctx)
    path = config_path(state.config_path)
    table, leaf = split_key(key)
    dotted = f"{table}.{leaf}".lstrip(".")
    result = set_value(path, name, dotted, parse_value(dotted, value))
    shown = f"; see `{command_line(state, 'profile', 'show', name)}`"
    line = (f"profile {name!r}: {dotted} set ({path})" if result.changed
            else f"profile {name!r}: {dotted} already had this value; nothing changed")
    if result.dropped:
        line += "; removed " + ", ".join(result.dropped) + " (one source per secret)"
    _report(state, {"profile": name, "file": str(path), "key": dotted,
                    "changed": result.changed, "removed": list(result.dropped)},
            line + shown)


def unset_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to change.")],
    key: Annotated[str, typer.Argument(help=_KEY_HELP)],
) -> None:
    """Remove one setting of a profile (back to its default); a required one is refused."""
    from walletctl.config.profile import REQUIRED_PROFILE_KEYS
    from walletctl.config.profiles_file import config_path, split_key, unset_value

    state = get_state(ctx)
    path = config_path(state.config_path)
    table, leaf = split_key(key)
    dotted = f"{table}.{leaf}".lstrip(".")
    if dotted in REQUIRED_PROFILE_KEYS:
        from walletctl.errors import UsageError

        again = command_line(state, "profile", "set", name, dotted, "VALUE")
        raise UsageError(f"{dotted}: required, it cannot be unset",
                         hint=f"change it: `{again}`")
    result = unset_value(path, name, dotted)
    line = (f"profile {name!r}: {dotted} removed ({path})" if result.changed
            else f"profile {name!r}: {dotted} was not set; nothing changed")
    _report(state, {"profile": name, "file": str(path), "key": dotted,
                    "changed": result.changed}, line)


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


# `profile set NAME timeout -1`: a negative VALUE is a value, not an option
profile_app.command("set", context_settings={"ignore_unknown_options": True})(set_cmd)
profile_app.command("unset")(unset_cmd)
profile_app.command("default")(default_cmd)


# --------------------------------------------------------------------------- remove


@profile_app.command("remove")
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to remove.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove a profile from the profiles file (asks first on a terminal)."""
    from walletctl.config.profiles_file import config_path, load_file, remove_profile
    from walletctl.errors import ConfigError, UsageError

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
            _note("nothing removed")
            return
    result = remove_profile(path, name)
    _note(f"removed profile {name!r} from {path}")
    from walletctl.render.profiles import render_saved

    render_saved(state.output_format, {"profile": name, "file": str(path), "removed": True,
                                       "default_profile": result.file.default_profile})


# --------------------------------------------------------------------------- check

@dataclass(frozen=True)
class _Check:
    profile: str | None  # None for checks of the file itself
    check: str
    ok: bool
    detail: str
    hint: str | None = None
    warning: bool = False  # ok, but a command needs something more (reported, not failed)

    @classmethod
    def failed(cls, profile: str | None, check: str, exc: WalletctlError) -> _Check:
        return cls(profile, check, False, exc.message, exc.hint)


def _check_profile(profile: Profile, state: State | None = None) -> list[_Check]:
    from walletctl.config.secrets import (
        auth_header,
        resolve_secret_with_source,
        service_basic_auth,
    )
    from walletctl.errors import ConfigError

    name = profile.name
    results: list[_Check] = [_Check(name, "profile", True, "settings valid"),
                             _environment(profile)]
    auth = profile.auth
    if auth.scheme == "none" and not auth.has_source:
        results.append(_Check(name, "secret", True, "none needed (scheme none)"))
    else:
        stage = "secret"
        try:
            _, source = resolve_secret_with_source(profile)
            results.append(_Check(name, stage, True, f"found in {source}"))
            stage = "auth header"
            header = auth_header(profile)
            shown = "none" if header is None else f"{header[0]}: {auth.scheme} ****"
            results.append(_Check(name, stage, True, shown))
        except ConfigError as exc:
            results.append(_Check.failed(name, stage, exc))
    if auth.service_secret_env or auth.service_secret_file or auth.service_secret:
        try:
            service_basic_auth(profile)
            results.append(_Check(name, "service secret", True, "found"))
        except ConfigError as exc:
            results.append(_Check.failed(name, "service secret", exc))
    key_ok = all(r.ok for r in results)
    results.extend(_commands(profile, key_ok, state))
    return results


def _environment(profile: Profile) -> _Check:
    """The profile's environment, the detail exactly ``test`` or ``production``."""
    if not profile.is_production:
        return _Check(profile.name, "environment", True, profile.environment)
    return _Check(profile.name, "environment", True, profile.environment,
                  f"PRODUCTION: confirmations say so; batches and smoke need the name typed "
                  f"(--confirm-profile {profile.name} without a terminal); sandbox commands "
                  "and smoke --embedded refuse it")


_NEEDED_REDIRECTS = ("success_url", "error_url", "pending_url", "return_url")
_SMOKE_REDIRECT = "smoke redirect-sale, preauth-capture-refund, preauth-reversal, refusals"


def _keys(profile: Profile, hint: str) -> list[_Check]:
    """``walletctl keys``: the public key service's secret, or the API key in its place."""
    if _service_secret(profile):
        return [_Check(profile.name, "keys", True, "service secret configured")]
    if profile.auth.scheme == "none":
        return []
    return [_Check(profile.name, "keys", True,
                   "sends the API key as the public key service's secret (no service secret "
                   "set); a service with its own secret answers 401", hint, warning=True)]


def _service_secret(profile: Profile) -> bool:
    auth = profile.auth
    return bool(auth.service_secret_env or auth.service_secret_file or auth.service_secret)


def _browser_wallet(profile: Profile, hint: str) -> list[_Check]:
    """smoke's browser-wallet scenario: its first step asks the public key service."""
    name = profile.name
    if _service_secret(profile) or profile.auth.scheme == "none":
        return [_Check(name, "smoke browser-wallet", True, "service secret configured")]
    return [_Check(
        name, "smoke browser-wallet", True,
        "its first step (public keys) sends the API key as the service secret: a gateway "
        "(or `sandbox serve --service-secret`) with its own secret answers 401",
        hint, warning=True)]


def _commands(profile: Profile, key_ok: bool, state: State | None = None) -> list[_Check]:
    """Per command (and per smoke scenario): can it run, and if not, the `profile set` line
    that adds what it misses."""
    name = profile.name

    def set_line(key: str, value: str) -> str:
        return f"`{command_line(state, 'profile', 'set', name, key, value)}`"

    if not key_ok:
        return [_Check(name, "commands", False, "none can run until the secret above is found")]
    out = [_Check(name, "capture, refund, reverse, lookup, account", True,
                  "have what they need")]
    missing = [k for k in _NEEDED_REDIRECTS if k not in profile.redirects]
    if missing:
        out.append(_Check(
            name, "checkout", True,
            "needs --" + ", --".join(k.replace("_", "-") for k in missing)
            + " on each call: the profile has no [redirects] " + ", ".join(missing),
            "; ".join(set_line(f"redirects.{k}", f"https://your-shop/{k.split('_')[0]}")
                      for k in missing), warning=True))
    else:
        out.append(_Check(name, "checkout", True, "redirect URLs from [redirects]"))
    currency_hint = set_line("currency", "EUR")
    if profile.currency is None:
        out.append(_Check(name, "checkout, authorize currency", True,
                          "no default currency: pass --currency on each checkout and authorize",
                          currency_hint, warning=True))
    out.extend(_keys(profile, set_line("auth.service_secret_env", "VAR")))
    approval = ("a walletctl sandbox approves headlessly; another gateway needs "
                "--approve-url-command CMD")
    if profile.is_production:
        approval = "a production gateway needs --approve-url-command CMD (else skipped)"
    out.append(_Check(name, _SMOKE_REDIRECT, True,
                      f"have the key; currency {profile.currency or 'EUR (no default set)'}; "
                      f"approval: {approval}"))
    out.extend(_browser_wallet(profile, set_line("auth.service_secret_env", "VAR")))
    return out


def _online(profile: Profile) -> tuple[_Check, WalletctlError | None]:
    """One read-only request: a lookup of a reference that cannot exist (404 = accepted).
    A failure comes with its error, whose exit code the check then ends with (7 when the
    gateway cannot be reached, 6 when it answers 5xx, 9 when it refuses the credentials)."""
    import secrets

    from walletctl.cli.state import ENV
    from walletctl.client.gateway import GatewayClient
    from walletctl.errors import GatewayError, WalletctlError

    ref = f"walletctl-check-{secrets.token_hex(4)}"
    try:
        with GatewayClient(profile, transport=ENV.transport) as client:
            client.lookup(ref)
    except GatewayError as exc:
        if exc.status == 404:
            return _Check(profile.name, "online", True,
                          f"credentials accepted (lookup of {ref}: HTTP 404, as expected)"), None
        return _Check.failed(profile.name, "online", exc), exc
    except WalletctlError as exc:
        return _Check.failed(profile.name, "online", exc), exc
    return _Check(profile.name, "online", True, f"credentials accepted (lookup of {ref})"), None


def _online_keys(profile: Profile) -> tuple[_Check, WalletctlError | None]:
    """One request to the public key service (``walletctl keys``, smoke's browser wallet):
    its user and secret accepted, or the error (a 401 names the service secret)."""
    from walletctl.cli.state import ENV
    from walletctl.client.gateway import GatewayClient
    from walletctl.errors import WalletctlError
    from walletctl.ops.walletpay import fetch_keys

    try:
        with GatewayClient(profile, transport=ENV.transport) as client:
            fetch_keys(client)
    except WalletctlError as exc:
        return _Check.failed(profile.name, "online keys", exc), exc
    user = profile.auth.username or profile.user_id
    return _Check(profile.name, "online keys", True,
                  f"the public key service accepts user {user} and the service secret"), None


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
    from walletctl.config.profiles_file import config_path

    state = get_state(ctx)
    results: list[_Check] = []
    online_errors: list[WalletctlError] = []
    selected = _file_checks(results, config_path(state.config_path),
                            name or state.profile_name, every=all_profiles)
    for profile in selected:
        checks = _check_profile(profile, state)
        results.extend(checks)
        if online and all(r.ok for r in checks):
            result, error = _online(profile)
            results.append(result)
            if error is None and profile.auth.scheme != "none":
                result, error = _online_keys(profile)
                results.append(result)
            if error is not None:
                online_errors.append(error)
    _finish(state, results, online_errors)


def _file_checks(results: list[_Check], path: Path, name: str | None, *,
                 every: bool) -> list[Profile]:
    """The file's checks (appended to ``results``) and the profiles to check: ``every``
    one in the file, else ``name``'s (None: the selected one); none when the file or the
    name fails."""
    from walletctl.config.profile import display_path
    from walletctl.config.profiles_file import load_file, select_profile
    from walletctl.errors import ConfigError

    try:
        pf = load_file(path, check_permissions=False)
    except ConfigError as exc:
        results.append(_Check.failed(None, "file", exc))
        return []
    results.append(_Check(None, "file", True, f"{display_path(path)} parses"))
    if pf.mode is not None:
        if pf.holds_inline_secret and pf.mode & 0o077:
            detail = f"{pf.mode:04o} is too open for a file holding a secret"
            results.append(_Check(None, "permissions", False, detail, f"chmod 600 {path}"))
        else:
            note = "" if pf.holds_inline_secret else " (no inline secret)"
            results.append(_Check(None, "permissions", True, f"{pf.mode:04o}{note}"))
    if every:
        if not pf.profiles:
            results.append(_Check(None, "profiles", False, f"no profiles in {path}"))
        return list(pf.profiles.values())
    try:
        return [select_profile(pf, name)]
    except ConfigError as exc:
        results.append(_Check.failed(None, "profile", exc))
        return []


def _finish(state: State, checks: list[_Check], online_errors: list[WalletctlError]) -> None:
    """Render the checks; raise the error of the first failure (the online ones' own exit
    code when only they failed)."""
    from dataclasses import replace

    from walletctl.cli.state import carry_options
    from walletctl.errors import AuthError, ConfigError, WalletctlError
    from walletctl.render.profiles import render_checks

    results = [replace(r, hint=carry_options(r.hint, state)) for r in checks]
    render_checks(state.output_format, [asdict(r) for r in results])
    failed = [r for r in results if not r.ok]
    online_failed = [r for r in failed if r.check in ("online", "online keys")]
    if online_failed and len(failed) == len(online_failed):
        first = online_failed[0]
        if "HTTP 401" in first.detail or "HTTP 403" in first.detail:
            raise AuthError(401, description="credentials refused", hint=first.hint)
        error = WalletctlError(f"profile check failed: {first.detail}", hint=first.hint)
        error.exit_code = online_errors[0].exit_code  # 7 unreachable, 6 gateway, ...
        raise error
    if failed:
        raise ConfigError(
            f"profile check failed: {len(failed)} problem(s)",
            hint=failed[0].hint or failed[0].detail,
        )


profile_app.command("check")(check)


# --------------------------------------------------------------------------- example


_EXAMPLES = ("reference", "sandbox", "production-key-env", "key-file", "keyring")


@profile_app.command("example")
def example(
    kind: Annotated[str, typer.Argument(
        help="reference (every setting) | sandbox | production-key-env | key-file | keyring."
    )] = "reference",
) -> None:
    """Print a commented profiles file (every setting with its default and meaning)."""
    from walletctl import shipped
    from walletctl.errors import UsageError
    from walletctl.render.output import write_text

    if kind not in _EXAMPLES:
        raise UsageError(f"profile example: no example {kind!r}",
                         hint="one of: " + ", ".join(_EXAMPLES))
    write_text(shipped.read("sample-configs", f"{kind}.toml"))
