"""The profiles file on disk: where it is and which profile is used (docs/profiles.md), its
permissions (an inline secret needs ``chmod 600``, as ssh does), reading it, and writing it:
whole or edited in place with tomlkit (comments and layout kept), always checked by the
loader's rules (:func:`walletctl.config.profile.parse_document`) first, written 0600 through
a temporary file and an atomic rename, edits serialised with ``flock`` on the directory.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from walletctl.config.profile import (
    APPROVAL_OPERATIONS,
    AUTH_KEYS,
    HISTORY_KEYS,
    HISTORY_OPERATIONS,
    NAME_RULE,
    PROFILE_KEYS,
    REDIRECT_KEYS,
    Profile,
    ProfilesFile,
    parse_document,
    valid_profile_name,
)
from walletctl.constants import PATH_KEYS, Env
from walletctl.errors import ConfigError, UsageError

HEADER = (
    '# walletctl profiles (format: `walletctl profile example`, or docs/profiles.md).\n'
    "# `walletctl profile add/remove` edit this file in place and keep your comments.\n\n"
)

# --------------------------------------------------------------------------- where it is


def default_config_path() -> Path:
    """``<user config dir>/walletctl/profiles.toml`` (platformdirs; honours XDG_CONFIG_HOME)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("walletctl", appauthor=False)) / "profiles.toml"


def config_path(explicit: Path | None = None) -> Path:
    """The profiles file to use: ``explicit`` (--config) > $WALLETCTL_CONFIG > the default."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(Env.CONFIG)
    if env:
        return Path(env).expanduser()
    return default_config_path()


# --------------------------------------------------------------------------- private files


def file_mode(path: Path) -> int | None:
    """Permission bits of ``path`` (e.g. ``0o600``), or None where POSIX modes do not apply."""
    if os.name == "nt":
        return None
    return stat.S_IMODE(path.stat().st_mode)


def check_private(path: Path, mode: int | None = None, *, location: str | None = None) -> None:
    """Refuse a file holding a secret that group or others may read or write (as ssh does)."""
    if mode is None:
        mode = file_mode(path)
    if mode is not None and mode & 0o077:
        import shlex

        raise ConfigError(
            f"permissions {mode:04o} for '{path}' are too open; it holds a secret",
            location=location,
            hint=f"chmod 600 {shlex.quote(str(path))}",
        )


def ensure_dir(directory: Path) -> None:
    if not directory.exists():
        # Every directory created here is 0700, parents included (mkdir(parents=True) would
        # create them with the umask's 0755).
        missing = [directory, *(p for p in directory.parents if not p.exists())]
        for new in reversed(missing):
            new.mkdir(mode=0o700, exist_ok=True)
            if os.name != "nt":
                os.chmod(new, 0o700)  # mkdir's mode is masked by the umask


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file + rename), mode 0600, dir 0700 if new."""
    import tempfile

    path = Path(path)
    if path.is_symlink():
        # Write the link's target: replacing the link itself would break dotfile managers.
        path = path.resolve()
    ensure_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        if os.name != "nt":
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if os.name != "nt":  # make the rename durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# --------------------------------------------------------------------------- the file whole


_ADD_HINT = (
    "create one with `walletctl profile add NAME --base-url URL --merchant-id ID "
    "--store-id ID --user-id USER`"
)

MAX_CONFIG_BYTES = 1024 * 1024


def load_file(path: Path, *, check_permissions: bool = True) -> ProfilesFile:
    """Read and validate one profiles file (ConfigError naming what is wrong; an inline
    secret in a file others can read only when ``check_permissions``)."""
    path = Path(path).expanduser()
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; anything but a regular file
        # (FIFO, /dev/zero, a socket) is refused before a byte is read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError
                raise ConfigError(f"{path} is not a regular file (a FIFO or device?)")
            data = fh.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    except FileNotFoundError:
        raise ConfigError(f"no profiles file at {path}", hint=_ADD_HINT) from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a profiles file") from None
    except PermissionError:
        raise ConfigError(
            f"cannot read {path}: permission denied", hint=f"check the owner of {path}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}",
            hint="`walletctl profile example` prints a commented profiles file",
        ) from None
    default, profiles = parse_document(document, path)
    mode = None if os.name == "nt" else stat.S_IMODE(st.st_mode)
    result = ProfilesFile(
        path=path, default_profile=default, profiles=profiles, document=document, mode=mode
    )
    if check_permissions and result.holds_inline_secret:
        check_private(path, mode)
    return result


def select_profile(pf: ProfilesFile, name: str | None) -> Profile:
    """Pick a profile: ``name`` > $WALLETCTL_PROFILE > default_profile > the only profile."""
    chosen = name or os.environ.get(Env.PROFILE) or pf.default_profile
    available = ", ".join(key + (" (production)" if p.is_production else "")
                          for key, p in pf.profiles.items()) or "none"
    if chosen is None:
        if len(pf.profiles) == 1:
            return next(iter(pf.profiles.values()))
        if not pf.profiles:
            raise ConfigError(f"no profiles in {pf.path}", hint=_ADD_HINT)
        raise ConfigError(
            f"no profile selected and {pf.path} has {len(pf.profiles)} ({available})",
            hint="pass --profile NAME, set WALLETCTL_PROFILE, or set default_profile in the file",
        )
    if chosen not in pf.profiles:
        raise ConfigError(
            f"unknown profile {chosen!r} in {pf.path}; available: {available}",
            hint="see `walletctl profile list`",
        )
    return pf.profiles[chosen]


def uses_environment(name: str | None, path: Path | None) -> bool:
    """The profile ``name`` / ``path`` select is the environment's (config.env_profile):
    nothing named and ``$WALLETCTL_BASE_URL`` set, or ``env`` named, no file named and the
    default profiles file (if any) holding no profile of that name."""
    from walletctl.config import env_profile

    if env_profile.wanted(name, path):
        return True
    if (name != env_profile.NAME or path is not None or os.environ.get(Env.CONFIG)
            or not os.environ.get(Env.BASE_URL)):
        return False
    default = default_config_path()
    return not default.exists() or env_profile.NAME not in load_file(default).profiles


def load_profile(name: str | None = None, path: Path | None = None) -> Profile:
    """Load the selected profile from the selected file (see the module docstring), or from
    the environment alone (:func:`uses_environment`)."""
    from walletctl.config import env_profile

    if uses_environment(name, path):
        return env_profile.from_environment()
    return select_profile(load_file(config_path(path)), name)


def save_file(path: Path, document: dict[str, Any]) -> ProfilesFile:
    """Validate ``document`` by the loader's rules and write it with tomli-w (atomic, 0600);
    the saved file, parsed."""
    import tomli_w

    return _save(Path(path).expanduser(), document, HEADER + tomli_w.dumps(document))


# --------------------------------------------------------------------------- editing in place


@dataclass(frozen=True)
class EditResult:
    file: ProfilesFile
    changed: bool = True
    dropped: tuple[str, ...] = ()  # other sources of the same secret, removed by this edit
    backup: Path | None = None  # none is made: edits keep the file's comments and layout


@contextmanager
def directory_lock(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of ``path`` between processes (flock on its directory)."""
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

    if not path.exists():
        return tomlkit.parse(HEADER)
    load_file(path)  # the same strict checks (and messages) as every other command
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except ParseError as exc:  # pragma: no cover - load_file accepted it
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def _write(path: Path, document: Any) -> ProfilesFile:
    """Write a tomlkit document (comments and layout as they are)."""
    import tomlkit

    return _save(path, document.unwrap(), tomlkit.dumps(document))


def _save(path: Path, plain: dict[str, Any], text: str) -> ProfilesFile:
    """Write ``text``, the file of ``plain``, once it passes the loader's rules (never write
    what we would refuse to read); returns the saved file, parsed."""
    default, profiles = parse_document(plain, path)
    write_private(path, text.encode("utf-8"))
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
                replace: bool = False) -> EditResult:
    """Add (or with ``replace`` overwrite) profile ``name``; the first profile becomes
    default. UsageError for a bad or used name; nothing written when the result is invalid."""
    import tomlkit

    path = Path(path).expanduser()
    if not valid_profile_name(name):
        raise UsageError(f"bad profile name {name!r}: {NAME_RULE}")
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
        return EditResult(_write(path, document))  # nothing written when it is invalid


def _set_default(document: Any, name: str) -> None:
    """Set ``default_profile`` (tomlkit places a new top-level key before the tables)."""
    if "default_profile" in document:
        document["default_profile"] = name
    else:
        document.add("default_profile", name)


@contextmanager
def _existing(path: Path) -> Iterator[Any]:
    """The existing file as a tomlkit document, under the lock (none: the "no profiles
    file" error)."""
    if not path.exists():
        load_file(path)  # raises the "no profiles file" error
    with directory_lock(path):
        yield _read(path)


def remove_profile(path: Path, name: str) -> EditResult:
    """Remove profile ``name``; a default_profile pointing at it is moved or dropped."""
    path = Path(path).expanduser()
    with _existing(path) as document:
        _profile_table(document, path, name)  # an unknown name: the error listing the others
        profiles = document["profiles"]
        del profiles[name]
        if document.get("default_profile") == name:
            del document["default_profile"]
            if len(profiles) == 1:
                _set_default(document, next(iter(profiles)))
        return EditResult(_write(path, document))


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
    path = Path(path).expanduser()
    with _existing(path) as document:
        changed, dropped = change(_profile_table(document, path, name))
        if not changed:
            return EditResult(load_file(path), False)
        try:  # nothing is written when the result is invalid
            return EditResult(_write(path, document), True, tuple(dropped))
        except ConfigError as exc:
            raise _as_usage_error(exc, name, key) from None


def set_value(path: Path, name: str, key: str, value: Any) -> EditResult:
    """Set the dotted ``key`` of profile ``name`` (sub-tables made as needed). Setting one
    source of a secret drops the profile's other sources of it (:data:`KEY_SOURCES`)."""
    import tomlkit

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
    with _existing(path) as document:
        _profile_table(document, path, name)
        if document.get("default_profile") == name:
            return EditResult(load_file(path), False)
        _set_default(document, name)
        return EditResult(_write(path, document))


# --------------------------------------------------------------------------- dotted keys


# Tables inside a profile, by dotted name, and the keys each allows.
TABLES: dict[str, tuple[str, ...]] = {
    "": tuple(k for k in PROFILE_KEYS),
    "auth": AUTH_KEYS,
    "paths": tuple(PATH_KEYS),
    "redirects": REDIRECT_KEYS,
    "history": HISTORY_KEYS,
    "history.limits": HISTORY_OPERATIONS,
    "history.approvals": APPROVAL_OPERATIONS,
}
# Keys whose value is not a string.
NUMBER_KEYS = frozenset({"timeout"})
INTEGER_KEYS = frozenset({"history.approval_hours", "history.duplicate_window"})
BOOLEAN_KEYS = frozenset({"auth.keyring", "history.enabled"})
REASON_KEYS = frozenset({"history.require_reason"})
# Paths given on the command line are taken from the current directory (as `profile add`
# does), not from the profiles file's directory.
PATH_VALUE_KEYS = frozenset({"auth.key_file", "auth.service_secret_file", "history.path"})
# Inline secrets: the loader accepts them in a 0600 file, but never from argv (shell history,
# `ps`). Each names the sources to use instead.
INLINE_SECRETS = {
    "auth.key": "auth.key_env VAR, auth.key_file PATH or auth.keyring true",
    "auth.service_secret": "auth.service_secret_env VAR or auth.service_secret_file PATH",
}
# A profile has one source for each secret: setting one drops the others.
KEY_SOURCES = ("auth.key_env", "auth.key_file", "auth.keyring", "auth.key")
SERVICE_SOURCES = ("auth.service_secret_env", "auth.service_secret_file", "auth.service_secret")


def split_key(key: str) -> tuple[str, str]:
    """``history.approvals.refund`` -> (``history.approvals``, ``refund``), checked against the
    known keys (a typo is a usage error with the closest key)."""
    text = key.strip()
    table, _, leaf = text.rpartition(".")
    allowed = TABLES.get(table)
    if allowed is None or leaf not in allowed:
        import difflib

        every = all_keys()
        close = difflib.get_close_matches(text, every, n=1)
        hint = f"did you mean {close[0]}?" if close else "keys: " + ", ".join(every)
        raise UsageError(f"{key}: not a profile setting", hint=hint)
    full = f"{table}.{leaf}".lstrip(".")
    if full in TABLES:  # `auth`, `history.limits`: tables, set their keys one by one
        raise UsageError(f"{key}: is a table; set one of its keys, e.g. "
                         f"{full}.{TABLES[full][0]}")
    return table, leaf


def all_keys() -> list[str]:
    """Every settable dotted key, for help and suggestions."""
    every = (f"{table}.{name}".lstrip(".") for table, names in TABLES.items() for name in names)
    return [key for key in every if key not in TABLES]


def parse_value(key: str, text: str) -> Any:
    """VALUE (as typed) -> the TOML value for ``key``; a usage error names the key and rule."""
    if key in INLINE_SECRETS:
        raise UsageError(
            f"{key}: a secret is not taken from the command line (it would stay in your shell "
            f"history)", hint=f"set {INLINE_SECRETS[key]} instead")
    if key in BOOLEAN_KEYS:
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise UsageError(f"{key}: must be true or false")
        return lowered == "true"
    if key in NUMBER_KEYS:
        try:
            number = float(text)
        except ValueError:
            raise UsageError(f"{key}: must be a number of seconds") from None
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if key in INTEGER_KEYS:
        if not text.strip().isdigit():
            raise UsageError(f"{key}: must be a whole number")
        return int(text)
    if key in REASON_KEYS:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return [op.strip() for op in text.split(",") if op.strip()]
    if key in PATH_VALUE_KEYS and text.strip():
        return str(Path(text).expanduser().absolute())
    return text
