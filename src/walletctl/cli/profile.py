"""``walletctl profile list|show|add|set|unset|default|remove|check``: the profiles file.

Heavy imports (Rich tables, tomli-w, pydantic) happen inside the commands only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.profile_add import add
from walletctl.cli.profile_check import check
from walletctl.cli.profile_edit import default_cmd, set_cmd, unset_cmd
from walletctl.cli.state import ENV, get_state

if TYPE_CHECKING:
    from walletctl.config.profile import Profile, ProfilesFile

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

profile_app.command("add")(add)
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


# --------------------------------------------------------------------------- check, example

profile_app.command("check")(check)


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
