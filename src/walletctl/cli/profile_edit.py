"""``walletctl profile set|unset|default``: change one setting of a profile in place.

The file is edited with tomlkit (comments, layout and the other profiles kept), checked with
the loader's rules before it is written (a bad value changes nothing), and written 0600.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from walletctl.cli.state import State, command_line, get_state

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
