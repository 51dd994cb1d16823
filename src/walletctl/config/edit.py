"""Editing the profiles file in place: ``profile add/remove`` keep every comment and the layout.

The file is parsed with tomlkit (a style-preserving TOML library), the one profile table is
added, replaced or removed, and the result is validated with the same rules as loading before
it replaces the file atomically (temporary file + rename, mode 0600). Comments, blank lines,
key order and the other profiles are left exactly as they were.

Concurrent edits by two walletctl processes are serialised with ``flock`` on the file's
directory, so no lock file is ever left beside the profiles file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from walletctl.config.profile import ProfilesFile
from walletctl.errors import ConfigError, UsageError

HEADER = (
    '# walletctl profiles (format: `walletctl profile example`, or docs/profiles.md).\n'
    "# `walletctl profile add/remove` edit this file in place and keep your comments.\n\n"
)


@dataclass(frozen=True)
class SaveResult:
    file: ProfilesFile
    backup: Path | None = None  # kept for callers; comments are preserved, so always None


@contextmanager
def directory_lock(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of ``path`` between processes (flock on its directory)."""
    from walletctl.config.private import ensure_dir

    ensure_dir(path.parent)
    if os.name == "nt":
        yield
        return
    import fcntl

    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read(path: Path) -> Any:
    """The file as a tomlkit document (a new one, with our header, when it does not exist)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    from walletctl.config.profiles_file import load_file

    if not path.exists():
        return tomlkit.parse(HEADER)
    load_file(path)  # the same strict checks (and messages) as every other command
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except ParseError as exc:  # pragma: no cover - load_file accepted it
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def _write(path: Path, document: Any) -> ProfilesFile:
    import tomlkit

    from walletctl.config.private import write_private
    from walletctl.config.validate import parse_document

    plain = document.unwrap()
    default, profiles = parse_document(plain, path)  # never write what we would refuse to read
    write_private(path, tomlkit.dumps(document).encode("utf-8"))
    return ProfilesFile(path=path, default_profile=default, profiles=profiles, document=plain,
                        mode=None if os.name == "nt" else 0o600)


def toml_table(values: dict[str, Any]) -> Any:
    """A tomlkit table for a profile: scalars first, then [auth], [paths], [redirects]."""
    import tomlkit

    table = tomlkit.table()
    for key, value in values.items():
        if not isinstance(value, dict):
            table.add(key, value)
    for key, value in values.items():
        if isinstance(value, dict) and value:
            table.add(key, toml_table(value))
    return table


def add_profile(path: Path, name: str, table: dict[str, Any], *, make_default: bool = False,
                replace: bool = False) -> SaveResult:
    """Add (or with ``replace`` overwrite) profile ``name``; the first profile becomes default.

    Raises ConfigError when the existing file is invalid, UsageError when the name is bad or
    already used (without ``replace``). Nothing is written when the result would be invalid.
    """
    import tomlkit

    from walletctl.config.validate import parse_document, valid_profile_name

    path = Path(path).expanduser()
    if not valid_profile_name(name):
        raise UsageError(
            f"bad profile name {name!r}: use letters, digits, '-' and '_' "
            "(at most 64, starting with a letter or digit)"
        )
    with directory_lock(path):
        document = _read(path)
        if "profiles" not in document:
            document.add("profiles", tomlkit.table(is_super_table=True))
        profiles = document["profiles"]
        if name in profiles and not replace:
            raise UsageError(
                f"profile {name!r} already exists in {path}", hint="add --force to replace it"
            )
        profiles[name] = toml_table(table)
        if make_default or len(profiles) == 1:
            _set_default(document, name)
        parse_document(document.unwrap(), path)  # refuse before touching anything
        return SaveResult(_write(path, document))


def _set_default(document: Any, name: str) -> None:
    """Set ``default_profile`` (tomlkit places a new top-level key before the tables)."""
    if "default_profile" in document:
        document["default_profile"] = name
    else:
        document.add("default_profile", name)


def remove_profile(path: Path, name: str) -> SaveResult:
    """Remove profile ``name``; a default_profile pointing at it is moved or dropped."""
    from walletctl.config.profiles_file import load_file

    path = Path(path).expanduser()
    if not path.exists():
        load_file(path)  # raises the "no profiles file" error
    with directory_lock(path):
        document = _read(path)
        _profile_table(document, path, name)  # an unknown name: the error listing the others
        profiles = document["profiles"]
        del profiles[name]
        if document.get("default_profile") == name:
            del document["default_profile"]
            if len(profiles) == 1:
                _set_default(document, next(iter(profiles)))
        return SaveResult(_write(path, document))


@dataclass(frozen=True)
class EditResult:
    file: ProfilesFile
    changed: bool
    dropped: tuple[str, ...] = ()  # other sources of the same secret, removed by this edit


def _profile_table(document: Any, path: Path, name: str) -> Any:
    profiles = document.get("profiles", {})
    if name not in profiles:
        raise ConfigError(
            f"unknown profile {name!r} in {path}; available: {', '.join(profiles) or 'none'}",
            hint="see `walletctl profile list`",
        )
    return profiles[name]


def _as_usage_error(exc: ConfigError, name: str, key: str) -> UsageError | ConfigError:
    """A rule broken by the edited key -> ``KEY: rule`` (a usage error: the value typed)."""
    prefix = f"profiles.{name} -> "
    location = exc.location or ""
    if location.startswith(prefix):
        where = location.removeprefix(prefix).replace(" -> ", ".")
        rule = exc.message.removeprefix(f"{location}: ")
        return UsageError(f"{where}: {rule}", hint=None if where == key else exc.hint)
    return exc


def _edit(path: Path, name: str, key: str, change: Any) -> EditResult:
    """Apply ``change(profile_table)`` -> (changed, dropped) under the lock; validate; write."""
    from walletctl.config.validate import parse_document

    path = Path(path).expanduser()
    if not path.exists():
        from walletctl.config.profiles_file import load_file

        load_file(path)  # raises the "no profiles file" error
    with directory_lock(path):
        document = _read(path)
        changed, dropped = change(_profile_table(document, path, name))
        if not changed:
            from walletctl.config.profiles_file import load_file

            return EditResult(load_file(path), False)
        try:
            parse_document(document.unwrap(), path)  # refuse before touching anything
        except ConfigError as exc:
            raise _as_usage_error(exc, name, key) from None
        return EditResult(_write(path, document), True, tuple(dropped))


def set_value(path: Path, name: str, key: str, value: Any) -> EditResult:
    """Set the dotted ``key`` of profile ``name`` (sub-tables made as needed). Setting one
    source of a secret drops the profile's other sources of it (see ``settings``)."""
    import tomlkit

    from walletctl.config.settings import KEY_SOURCES, SERVICE_SOURCES, split_key

    table_name, leaf = split_key(key)

    def change(profile: Any) -> tuple[bool, list[str]]:
        table = profile
        for part in filter(None, table_name.split(".")):
            if part not in table:
                table[part] = tomlkit.table()
            table = table[part]
        dropped: list[str] = []
        for group in (KEY_SOURCES, SERVICE_SOURCES):
            if key in group and value is not False:
                for other in group:
                    other_leaf = other.partition(".")[2]
                    if other != key and other_leaf in table:
                        del table[other_leaf]
                        dropped.append(other)
        if leaf in table and table[leaf].unwrap() == value and not dropped:
            return False, []
        table[leaf] = value
        return True, dropped

    return _edit(path, name, key, change)


def unset_value(path: Path, name: str, key: str) -> EditResult:
    """Remove the dotted ``key`` of profile ``name`` (a table left empty goes too)."""
    from walletctl.config.settings import split_key

    table_name, leaf = split_key(key)

    def change(profile: Any) -> tuple[bool, list[str]]:
        chain = [profile]
        for part in filter(None, table_name.split(".")):
            if part not in chain[-1]:
                return False, []
            chain.append(chain[-1][part])
        if leaf not in chain[-1]:
            return False, []
        del chain[-1][leaf]
        parts = list(filter(None, table_name.split(".")))
        while parts and not chain[-1]:  # drop tables left empty, innermost first
            chain.pop()
            del chain[-1][parts.pop()]
        return True, []

    return _edit(path, name, key, change)


def set_default(path: Path, name: str) -> EditResult:
    """Make ``name`` the default profile (``default_profile``)."""
    path = Path(path).expanduser()
    if not path.exists():
        from walletctl.config.profiles_file import load_file

        load_file(path)
    with directory_lock(path):
        document = _read(path)
        _profile_table(document, path, name)
        if document.get("default_profile") == name:
            from walletctl.config.profiles_file import load_file

            return EditResult(load_file(path), False)
        _set_default(document, name)
        return EditResult(_write(path, document), True)
