"""``walletctl profile list|show|add|remove|check``: manage the TOML profiles file.

Heavy imports (Rich tables, tomli-w, pydantic) happen inside the commands only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.state import ENV, OutputFormat, get_state

if TYPE_CHECKING:
    from walletctl.config.profile import Profile, ProfilesFile
    from walletctl.errors import WalletctlError

profile_app = typer.Typer(
    help="Manage merchant profiles (the TOML profiles file).",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
)

# Flags of `profile add` by the profile key they set (to report bad values as flag errors).
_FLAG_FOR_KEY = {
    "base_url": "--base-url",
    "merchant_id": "--merchant-id",
    "store_id": "--store-id",
    "user_id": "--user-id",
    "amount_format": "--amount-format",
    "currency": "--currency",
    "timeout": "--timeout",
    "auth -> scheme": "--auth-scheme",
    "auth -> header": "--header",
    "auth -> username": "--username",
    "auth -> key_env": "--key-env",
    "auth -> key_file": "--key-file",
}


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.add_typer(
        profile_app,
        name="profile",
        help="List, show, add, remove and check merchant profiles (profiles.toml).",
    )


# --------------------------------------------------------------------------- output helpers


def _emit_rows(rows: list[dict[str, Any]], fmt: OutputFormat, title: str) -> None:
    """Rows as a Rich table, one JSON array, NDJSON lines or CSV (header + rows)."""
    import sys

    if fmt == "json":
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif fmt == "ndjson":
        import json

        sys.stdout.writelines(json.dumps(row) + "\n" for row in rows)
    elif fmt == "csv":
        import csv

        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows({k: _csv_cell(v) for k, v in row.items()} for row in rows)
    else:
        from rich.table import Table

        from walletctl.render.console import out

        table = Table(title=title, title_justify="left")
        for column in rows[0] if rows else ():
            table.add_column(column.replace("_", " "), overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row.values()))
        out().print(table)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if value is True:
        return "*"
    if value is False:
        return ""
    return str(value)


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value


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
    """List the profiles (name, base URL, merchant, store, auth scheme; * marks the default)."""
    from walletctl.config.store import config_path, load_file

    state = get_state(ctx)
    path = config_path(state.config_path)
    fmt = state.output_format
    if not path.exists():
        if fmt in ("json", "ndjson", "csv"):
            _emit_rows([], fmt, "")
        _note(f"no profiles yet ({path} does not exist)")
        _note(
            "create one with `walletctl profile add NAME --base-url URL --merchant-id ID "
            "--store-id ID --user-id USER`"
        )
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
        }
        for p in pf.profiles.values()
    ]
    if not rows and fmt == "table":
        _note(f"no profiles in {path}")
        return
    _emit_rows(rows, fmt, str(path))


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
    }


def _flatten(settings: dict[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    overridden = set(settings.get("paths_overridden", ()))
    for key, value in settings.items():
        if key == "paths_overridden":
            continue
        if isinstance(value, dict):
            for sub, subval in value.items():
                text = _cell(subval)
                if key == "paths" and sub not in overridden:
                    text += " (default)"
                rows.append((f"{key}.{sub}", text))
        elif isinstance(value, bool):
            rows.append((key, "yes" if value else "no"))
        else:
            rows.append((key, _cell(value)))
    return rows


@profile_app.command("show")
def show(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to show (default: the selected profile).")
    ] = None,
) -> None:
    """Show every setting of a profile; the secret's source is described, never the secret."""
    from walletctl.config.store import config_path, load_file, select_profile

    state = get_state(ctx)
    pf = load_file(config_path(state.config_path))
    profile = select_profile(pf, name or state.profile_name)
    settings = _profile_settings(profile, _selected_default(pf))
    fmt = state.output_format
    if fmt in ("json", "ndjson"):
        import json
        import sys

        sys.stdout.write(json.dumps(settings, indent=2 if fmt == "json" else None) + "\n")
    elif fmt == "csv":
        _emit_rows([{"setting": k, "value": v} for k, v in _flatten(settings)], "csv", "")
    else:
        from rich.table import Table

        from walletctl.render.console import out

        table = Table(title=f"profile {profile.name}", title_justify="left", show_header=False)
        table.add_column("setting", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in _flatten(settings):
            table.add_row(key, value)
        out().print(table)


# --------------------------------------------------------------------------- add


def _default_env_name(name: str) -> str:
    import re

    return "WALLETCTL_" + re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") + "_KEY"


@profile_app.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile name (letters, digits, '-', '_').")],
    base_url: Annotated[str, typer.Option("--base-url", help="Gateway base URL.")],
    merchant_id: Annotated[str, typer.Option("--merchant-id", help="merchantId.")],
    store_id: Annotated[str, typer.Option("--store-id", help="storeId.")],
    user_id: Annotated[str, typer.Option("--user-id", help="userId (service user).")],
    *,
    amount_format: Annotated[
        str, typer.Option("--amount-format", help="Wire format of amounts: minor | decimal.")
    ] = "minor",
    currency: Annotated[
        str | None, typer.Option("--currency", help="Default ISO 4217 currency.")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Request timeout in seconds.")
    ] = None,
    auth_scheme: Annotated[
        str,
        typer.Option("--auth-scheme", help="PublicApiKey | Bearer | Basic | header | none."),
    ] = "PublicApiKey",
    header: Annotated[
        str | None, typer.Option("--header", help="Header name for --auth-scheme header.")
    ] = None,
    username: Annotated[
        str | None, typer.Option("--username", help="Basic auth user (default: --user-id).")
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option("--key-env", help="Read the API key from this environment variable."),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option("--key-file", help="Read the API key from this file (must be 0600)."),
    ] = None,
    keyring: Annotated[
        bool, typer.Option("--keyring", help="Read the API key from the system keyring.")
    ] = False,
    default: Annotated[
        bool, typer.Option("--default", help="Make it the default profile.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing profile.")] = False,
) -> None:
    """Add a profile to the profiles file (created 0600 if missing).

    With no --key-env/--key-file/--keyring the key is read from $WALLETCTL_<NAME>_KEY.
    Inline keys are not taken from flags (they would land in your shell history).
    """
    from walletctl.config.store import add_profile, config_path
    from walletctl.errors import ConfigError, UsageError

    state = get_state(ctx)
    sources = [
        flag
        for flag, on in (("--key-env", key_env), ("--key-file", key_file), ("--keyring", keyring))
        if on
    ]
    if len(sources) > 1:
        raise UsageError(f"{' and '.join(sources)} are exclusive: pick one secret source")
    table: dict[str, Any] = {
        "base_url": base_url,
        "merchant_id": merchant_id,
        "store_id": store_id,
        "user_id": user_id,
        "amount_format": amount_format,
    }
    if currency is not None:
        table["currency"] = currency.upper()
    if timeout is not None:
        table["timeout"] = int(timeout) if float(timeout).is_integer() else timeout
    auth: dict[str, Any] = {"scheme": auth_scheme}
    if header is not None:
        auth["header"] = header
    if username is not None:
        auth["username"] = username
    if key_file is not None:
        auth["key_file"] = str(key_file.expanduser().absolute())
    elif keyring:
        auth["keyring"] = True
    elif key_env is not None:
        auth["key_env"] = key_env
    elif auth_scheme.lower() != "none":
        auth["key_env"] = _default_env_name(name)
    table["auth"] = auth

    path = config_path(state.config_path)
    try:
        result = add_profile(path, name, table, make_default=default, replace=force)
    except ConfigError as exc:
        prefix = f"profiles.{name} -> "
        if exc.location and exc.location.startswith(prefix):
            key = exc.location.removeprefix(prefix)
            flag = _FLAG_FOR_KEY.get(key)
            if flag:
                rule = exc.message.removeprefix(f"{exc.location}: ")
                raise UsageError(f"{flag}: {rule}") from None
        raise
    _note(f"saved profile {name!r} to {path} (mode 0600)")
    if result.backup is not None:
        _note(f"the previous file had comments; it is kept as {result.backup}")
    saved = result.file.profiles[name]
    if saved.auth.key_env:
        _note(f"the API key is read from ${saved.auth.key_env}")
    elif saved.auth.keyring:
        _note(f"store the API key with `keyring set walletctl {name}`")
    elif saved.auth.key_file is not None:
        from walletctl.config.store import file_mode

        key_file = saved.auth.key_file
        if not key_file.exists():
            _note(f"create {key_file} with the API key, readable by you only (chmod 600)")
        elif (mode := file_mode(key_file)) is not None and mode & 0o077:
            _note(f"{key_file} is {mode:04o}: it is refused until `chmod 600 {key_file}`")


# --------------------------------------------------------------------------- remove


@profile_app.command("remove")
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Profile to remove.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove a profile from the profiles file (asks first on a terminal)."""
    from walletctl.config.store import config_path, load_file, remove_profile
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
    if result.backup is not None:
        _note(f"the previous file had comments; it is kept as {result.backup}")


# --------------------------------------------------------------------------- check


@dataclass(frozen=True)
class _Check:
    profile: str | None  # None for checks of the file itself
    check: str
    ok: bool
    detail: str
    hint: str | None = None

    @classmethod
    def failed(cls, profile: str | None, check: str, exc: WalletctlError) -> _Check:
        return cls(profile, check, False, exc.message, exc.hint)


def _check_profile(profile: Profile) -> list[_Check]:
    from walletctl.config.secrets import (
        auth_header,
        resolve_secret_with_source,
        service_basic_auth,
    )
    from walletctl.errors import ConfigError

    name = profile.name
    results: list[_Check] = [_Check(name, "profile", True, "settings valid")]
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
    if auth.service_secret_env or auth.service_secret_file:
        try:
            service_basic_auth(profile)
            results.append(_Check(name, "service secret", True, "found"))
        except ConfigError as exc:
            results.append(_Check.failed(name, "service secret", exc))
    return results


@profile_app.command("check")
def check(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to check (default: the selected profile).")
    ] = None,
    all_profiles: Annotated[
        bool, typer.Option("--all", help="Check every profile in the file.")
    ] = False,
) -> None:
    """Check a profile offline: file parses, permissions, secret found, auth header builds.

    Prints one line per check (ok / FAIL); exits with the config exit code when one fails.
    Nothing is sent to the gateway.
    """
    from walletctl.config.profile import display_path
    from walletctl.config.store import config_path, load_file, select_profile
    from walletctl.errors import ConfigError

    state = get_state(ctx)
    path = config_path(state.config_path)
    results: list[_Check] = []

    def finish() -> None:
        _print_checks(results, state.output_format)
        failed = [r for r in results if not r.ok]
        if failed:
            raise ConfigError(
                f"profile check failed: {len(failed)} problem(s)",
                hint=failed[0].hint or failed[0].detail,
            )

    try:
        pf = load_file(path, check_permissions=False)
    except ConfigError as exc:
        results.append(_Check.failed(None, "file", exc))
        return finish()
    results.append(_Check(None, "file", True, f"{display_path(path)} parses"))
    if pf.mode is not None:
        if pf.holds_inline_secret and pf.mode & 0o077:
            detail = f"{pf.mode:04o} is too open for a file holding a secret"
            results.append(_Check(None, "permissions", False, detail, f"chmod 600 {path}"))
        else:
            note = "" if pf.holds_inline_secret else " (no inline secret)"
            results.append(_Check(None, "permissions", True, f"{pf.mode:04o}{note}"))
    if all_profiles:
        selected = list(pf.profiles.values())
        if not selected:
            results.append(_Check(None, "profiles", False, f"no profiles in {path}"))
    else:
        try:
            selected = [select_profile(pf, name or state.profile_name)]
        except ConfigError as exc:
            results.append(_Check.failed(None, "profile", exc))
            return finish()
    for profile in selected:
        results.extend(_check_profile(profile))
    return finish()


def _print_checks(results: list[_Check], fmt: OutputFormat) -> None:
    if fmt != "table":
        _emit_rows([asdict(r) for r in results], fmt, "")
        return
    from rich.markup import escape

    from walletctl.render.console import out

    console = out()
    for r in results:
        status = "[green]ok  [/green]" if r.ok else "[bold red]FAIL[/bold red]"
        label = f"{r.profile}: {r.check}" if r.profile else r.check
        console.print(f"{status} {escape(label)}: {escape(r.detail)}", soft_wrap=True)
