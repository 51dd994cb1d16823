"""The profiles file: where it is, strict TOML loading, atomic 0600 saving, the permission rule.

Where the file is (first that applies)::

    --config PATH  >  $WALLETCTL_CONFIG  >  <platform config dir>/walletctl/profiles.toml
                                            (e.g. ~/.config/walletctl/profiles.toml)

Which profile is used (first that applies)::

    --profile/-p NAME  >  $WALLETCTL_PROFILE  >  default_profile in the file  >  the only profile

Loading is strict: an unknown key, a value of the wrong type or an invalid value is refused with
its location (``profiles.prod -> auth -> kee_env: unknown key``) so a typo never silently falls
back to a default. Values that could be secrets are never echoed in messages.

Permissions follow ssh: a profiles file that holds an inline secret (``auth.key``) must not be
readable or writable by group or others (``chmod 600``); the same holds for a ``key_file``
(checked by ``config.secrets``). Files written by walletctl are created 0600 in a 0700 directory,
through a temporary file and an atomic rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from walletctl.config.profile import (
    AUTH_SCHEMES,
    HISTORY_OPERATIONS,
    REDIRECT_KEYS,
    AuthSettings,
    HistorySettings,
    Profile,
    ProfilesFile,
    display_path,
)
from walletctl.constants import DEFAULT_TIMEOUT, MAX_TIMEOUT, PATH_KEYS, Env
from walletctl.errors import ConfigError

__all__ = [
    "AUTH_KEYS",
    "PROFILE_KEYS",
    "REQUIRED_PROFILE_KEYS",
    "TOP_LEVEL_KEYS",
    "ProfilesFile",
    "SaveResult",
    "add_profile",
    "check_private",
    "config_path",
    "default_config_path",
    "ensure_dir",
    "file_mode",
    "load_file",
    "load_profile",
    "parse_document",
    "remove_profile",
    "save_file",
    "select_profile",
    "valid_profile_name",
]

TOP_LEVEL_KEYS: tuple[str, ...] = ("default_profile", "profiles")
REQUIRED_PROFILE_KEYS: tuple[str, ...] = ("base_url", "merchant_id", "store_id", "user_id")
PROFILE_KEYS: tuple[str, ...] = (
    *REQUIRED_PROFILE_KEYS,
    "amount_format",
    "currency",
    "timeout",
    "timezone",
    "auth",
    "paths",
    "redirects",
    "history",
)
HISTORY_KEYS: tuple[str, ...] = ("enabled", "path", "require_reason", "limits")
AUTH_KEYS: tuple[str, ...] = (
    "scheme",
    "key_env",
    "key_file",
    "keyring",
    "key",
    "header",
    "username",
    "service_secret_env",
    "service_secret_file",
    "service_secret",
)
AMOUNT_FORMATS: tuple[str, ...] = ("minor", "decimal")

# Character classes checked without `re` (compiling patterns costs start-up time).
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_TOKEN = _ALNUM | frozenset("!#$%&'*+.^_`|~-")  # RFC 9110 token characters


def valid_profile_name(name: str) -> bool:
    """Letters, digits, '-' and '_', at most 64, starting with a letter or digit."""
    return 0 < len(name) <= 64 and name[0] in _ALNUM and all(c in _ALNUM or c in "-_" for c in name)


def _valid_env_name(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and all(c in _ALNUM or c == "_" for c in name)


def _valid_header_name(name: str) -> bool:
    return bool(name) and all(c in _TOKEN for c in name)


_SEP = " -> "
_ADD_HINT = (
    "create one with `walletctl profile add NAME --base-url URL --merchant-id ID "
    "--store-id ID --user-id USER`"
)


# --------------------------------------------------------------------------- discovery


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


_resolve_path = config_path  # for functions whose `config_path` parameter shadows it


# --------------------------------------------------------------------------- permissions


def file_mode(path: Path) -> int | None:
    """Permission bits of ``path`` (e.g. ``0o600``), or None where POSIX modes do not apply."""
    if os.name == "nt":
        return None
    return stat.S_IMODE(path.stat().st_mode)


def _too_open(mode: int | None) -> bool:
    return mode is not None and bool(mode & 0o077)


def check_private(path: Path, mode: int | None = None, *, location: str | None = None) -> None:
    """Refuse a file holding a secret that group or others may read or write (as ssh does)."""
    if mode is None:
        mode = file_mode(path)
    if _too_open(mode):
        import shlex

        assert mode is not None
        raise ConfigError(
            f"permissions {mode:04o} for '{path}' are too open; it holds a secret",
            location=location,
            hint=f"chmod 600 {shlex.quote(str(path))}",
        )


# --------------------------------------------------------------------------- parsing


def _loc(*parts: str) -> str:
    return _SEP.join(p for p in parts if p)


class _Parser:
    """Validates one TOML document; every failure is a ConfigError with its location."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base_dir = path.parent

    def fail(self, location: str, message: str, hint: str | None = None) -> NoReturn:
        where = f"in {display_path(self.path)}"
        raise ConfigError(message, location=location, hint=f"{hint} ({where})" if hint else where)

    # -- generic value checks

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...], location: str) -> None:
        for key in table:
            if key not in allowed:
                import difflib

                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else "allowed keys: " + ", ".join(allowed)
                )
                self.fail(_loc(location, str(key)), "unknown key", hint)

    def table(self, value: Any, location: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(location, f"must be a table, not {_kind(value)}")
        return value

    def sub(self, table: dict[str, Any], key: str, location: str) -> dict[str, Any]:
        """The optional sub-table ``key`` of ``table`` (empty when absent)."""
        return self.table(table.get(key, {}), _loc(location, key))

    def text(self, value: Any, location: str, max_length: int = 1024) -> str:
        if not isinstance(value, str):
            self.fail(location, f"must be a string, not {_kind(value)}")
        if not value.strip():
            self.fail(location, "must not be empty")
        if len(value) > max_length:
            self.fail(location, f"must be at most {max_length} characters (got {len(value)})")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            self.fail(location, "must not contain control characters")
        return value

    def url(self, value: Any, location: str) -> str:
        text = self.text(value, location)
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            self.fail(location, "must be an http(s) URL such as https://gateway.example")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.fail(location, "must be an http(s) URL such as https://gateway.example")
        if parts.username is not None or parts.password is not None:
            # Never echo it: the user part may be a credential.
            self.fail(location, "must not contain credentials", "put them in the [auth] table")
        if " " in text:
            self.fail(location, "must not contain spaces")
        return text

    def env_name(self, value: Any, location: str) -> str:
        text = self.text(value, location)
        if not _valid_env_name(text):
            # Not echoed: a pasted secret in the wrong key must not reach the terminal.
            self.fail(location, "must be an environment variable name such as WALLETCTL_KEY")
        return text

    def file_path(self, value: Any, location: str) -> Path:
        p = Path(self.text(value, location)).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    # -- the document

    def document(self, doc: dict[str, Any]) -> tuple[str | None, dict[str, Profile]]:
        self.check_keys(doc, TOP_LEVEL_KEYS, "")
        raw_profiles = self.table(doc.get("profiles", {}), "profiles")
        profiles: dict[str, Profile] = {}
        for name, table in raw_profiles.items():
            location = f"profiles.{name}"
            if not valid_profile_name(name):
                self.fail(
                    location,
                    "bad profile name",
                    "use letters, digits, '-' and '_' (at most 64, starting with a letter "
                    "or digit)",
                )
            profiles[name] = self.profile(name, self.table(table, location))
        default = doc.get("default_profile")
        if default is not None:
            default = self.text(default, "default_profile")
            if default not in profiles:
                self.fail(
                    "default_profile",
                    f"no profile named {default!r}",
                    "profiles in the file: " + (", ".join(profiles) or "none"),
                )
        return default, profiles

    def profile(self, name: str, table: dict[str, Any]) -> Profile:
        loc = f"profiles.{name}"
        self.check_keys(table, PROFILE_KEYS, loc)
        for key in REQUIRED_PROFILE_KEYS:
            if key not in table:
                self.fail(_loc(loc, key), "missing (required)")
        amount_format = table.get("amount_format", "minor")
        if amount_format not in AMOUNT_FORMATS:
            self.fail(
                _loc(loc, "amount_format"),
                f"must be 'minor' or 'decimal', not {_show(amount_format)}",
            )
        currency = None
        if "currency" in table:
            raw = self.text(table["currency"], _loc(loc, "currency"))
            from walletctl.models.money import check_currency

            try:
                currency = check_currency(raw)
            except ValueError as exc:
                self.fail(_loc(loc, "currency"), str(exc))
        timeout = DEFAULT_TIMEOUT
        if "timeout" in table:
            value = table["timeout"]
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.fail(_loc(loc, "timeout"), f"must be a number of seconds, not {_kind(value)}")
            if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
                self.fail(_loc(loc, "timeout"),
                          f"must be greater than 0 and at most {MAX_TIMEOUT:g} seconds")
            timeout = float(value)
        timezone = None
        if "timezone" in table:
            timezone = self.text(table["timezone"], _loc(loc, "timezone"))
            _check_timezone(self, timezone, _loc(loc, "timezone"))
        auth = self.auth(self.sub(table, "auth", loc), _loc(loc, "auth"))
        paths = self.paths(self.sub(table, "paths", loc), _loc(loc, "paths"))
        redirects = self.redirects(self.sub(table, "redirects", loc), _loc(loc, "redirects"))
        history = self.history(self.sub(table, "history", loc), _loc(loc, "history"))
        return Profile(
            name=name,
            base_url=self.url(table["base_url"], _loc(loc, "base_url")),
            merchant_id=self.text(table["merchant_id"], _loc(loc, "merchant_id"), 255),
            store_id=self.text(table["store_id"], _loc(loc, "store_id"), 255),
            user_id=self.text(table["user_id"], _loc(loc, "user_id"), 255),
            amount_format=amount_format,
            currency=currency,
            timeout=timeout,
            timezone=timezone,
            auth=auth,
            paths=paths,
            redirects=redirects,
            history=history,
            source=self.path,
        )

    def auth(self, table: dict[str, Any], loc: str) -> AuthSettings:
        self.check_keys(table, AUTH_KEYS, loc)
        scheme = "PublicApiKey"
        if "scheme" in table:
            raw = self.text(table["scheme"], _loc(loc, "scheme"))
            match = [s for s in AUTH_SCHEMES if s.lower() == raw.lower()]
            if not match:
                self.fail(
                    _loc(loc, "scheme"),
                    f"must be one of {', '.join(AUTH_SCHEMES)}",
                )
            scheme = match[0]
        key_env = (
            self.env_name(table["key_env"], _loc(loc, "key_env")) if "key_env" in table else None
        )
        key_file = (
            self.file_path(table["key_file"], _loc(loc, "key_file"))
            if "key_file" in table
            else None
        )
        keyring = table.get("keyring", False)
        if not isinstance(keyring, bool):
            self.fail(_loc(loc, "keyring"), f"must be true or false, not {_kind(keyring)}")
        key = None
        if "key" in table:
            key = table["key"]
            if not isinstance(key, str):
                self.fail(_loc(loc, "key"), f"must be a string, not {_kind(key)}")
            if not key.strip():
                self.fail(_loc(loc, "key"), "must not be empty")
        header = None
        if "header" in table:
            header = self.text(table["header"], _loc(loc, "header"))
            if not _valid_header_name(header):
                self.fail(_loc(loc, "header"), "must be an HTTP header name such as X-Api-Key")
            if scheme != "header":
                self.fail(
                    _loc(loc, "header"),
                    'is only used with scheme = "header"',
                    f'remove it, or set scheme = "header" (scheme is now {scheme!r})',
                )
        elif scheme == "header":
            self.fail(
                _loc(loc, "header"),
                'missing (required when scheme = "header")',
                'add header = "X-Api-Key" (the name of the header carrying the key)',
            )
        username = None
        if "username" in table:
            username = self.text(table["username"], _loc(loc, "username"))
            if ":" in username:
                self.fail(_loc(loc, "username"), "must not contain ':' (Basic auth)")
        service_env = (
            self.env_name(table["service_secret_env"], _loc(loc, "service_secret_env"))
            if "service_secret_env" in table
            else None
        )
        service_file = (
            self.file_path(table["service_secret_file"], _loc(loc, "service_secret_file"))
            if "service_secret_file" in table
            else None
        )
        service_inline = None
        if "service_secret" in table:
            service_inline = table["service_secret"]
            if not isinstance(service_inline, str) or not service_inline.strip():
                self.fail(_loc(loc, "service_secret"), "must be a non-empty string")
        return AuthSettings(
            service_secret=service_inline,
            scheme=scheme,  # type: ignore[arg-type]  # checked against AUTH_SCHEMES above
            key_env=key_env,
            key_file=key_file,
            keyring=keyring,
            key=key,
            header=header,
            username=username,
            service_secret_env=service_env,
            service_secret_file=service_file,
        )

    def paths(self, table: dict[str, Any], loc: str) -> dict[str, str]:
        self.check_keys(table, tuple(PATH_KEYS), loc)
        out: dict[str, str] = {}
        for key, value in table.items():
            text = self.text(value, _loc(loc, key))
            if not text.startswith("/") or " " in text or "?" in text or "#" in text:
                self.fail(
                    _loc(loc, key),
                    f"must be a URL path starting with '/', such as {PATH_KEYS[key]}",
                )
            out[key] = text
        return out

    def redirects(self, table: dict[str, Any], loc: str) -> dict[str, str]:
        self.check_keys(table, REDIRECT_KEYS, loc)
        return {key: self.url(value, _loc(loc, key)) for key, value in table.items()}


    def history(self, table: dict[str, Any], loc: str) -> HistorySettings:
        self.check_keys(table, HISTORY_KEYS, loc)
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            self.fail(_loc(loc, "enabled"), f"must be true or false, not {_kind(enabled)}")
        path = self.file_path(table["path"], _loc(loc, "path")) if "path" in table else None
        ops = HISTORY_OPERATIONS
        raw = table.get("require_reason", [])
        if raw is True or raw is False:
            raw = list(ops) if raw else []
        if not isinstance(raw, list) or any(op not in ops for op in raw):
            self.fail(
                _loc(loc, "require_reason"),
                f"must be true, false or a list of operations ({', '.join(ops)})",
            )
        limits: dict[str, str] = {}
        for op, value in self.sub(table, "limits", loc).items():
            where = _loc(loc, "limits", str(op))
            if op not in ops:
                self.fail(where, f"not an operation; one of {', '.join(ops)}")
            text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
            if not isinstance(text, str) or not _is_amount(text):
                self.fail(where, 'must be an amount in major units as a string, e.g. "100.00"')
            limits[op] = text
        return HistorySettings(
            enabled=enabled, path=path, require_reason=tuple(raw), limits=limits
        )


def _is_amount(text: str) -> bool:
    whole, _, frac = text.partition(".")
    return 0 < len(text) <= 20 and whole.isascii() and whole.isdigit() and (
        frac == "" or (frac.isascii() and frac.isdigit())
    )


def _check_timezone(parser: _Parser, name: str, location: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        parser.fail(
            location, f"unknown time zone {name!r}", "use an IANA name such as Europe/Paris"
        )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a date/time" if hasattr(value, "isoformat") else type(value).__name__


def _show(value: Any) -> str:
    """A short rendering of a non-secret value for messages."""
    if isinstance(value, str):
        return repr(value[:40])
    return _kind(value)


def parse_document(document: dict[str, Any], path: Path) -> tuple[str | None, dict[str, Profile]]:
    """Validate a TOML document (as dicts); returns (default_profile, profiles by name)."""
    return _Parser(path).document(document)


# --------------------------------------------------------------------------- load


MAX_CONFIG_BYTES = 1024 * 1024


def load_file(path: Path, *, check_permissions: bool = True) -> ProfilesFile:
    """Read and validate one profiles file.

    Raises ConfigError when the file is missing or unreadable, is not TOML, breaks a rule
    (with the key's location), or holds an inline secret while group/world accessible
    (unless ``check_permissions`` is False: ``profile check`` reports that separately).
    """
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
    available = ", ".join(pf.profiles) or "none"
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


def load_profile(name: str | None = None, config_path: Path | None = None) -> Profile:
    """Load the selected profile from the selected file (see the module docstring)."""
    return select_profile(load_file(_resolve_path(config_path)), name)


# --------------------------------------------------------------------------- save


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


def save_file(path: Path, document: dict[str, Any]) -> ProfilesFile:
    """Validate ``document`` and write it to ``path`` with tomli-w (atomic, 0600).

    The document is checked with the same rules as :func:`load_file` first, so walletctl never
    writes a file it would refuse to read. Returns the saved file, parsed.
    """
    import tomli_w

    path = Path(path).expanduser()
    default, profiles = parse_document(document, path)
    data = (_HEADER + tomli_w.dumps(document)).encode("utf-8")
    write_private(path, data)
    return ProfilesFile(
        path=path,
        default_profile=default,
        profiles=profiles,
        document=document,
        mode=None if os.name == "nt" else 0o600,
    )


# Editing in place (comments kept): walletctl.config.edit; re-exported for callers.
from walletctl.config.edit import (  # noqa: E402 - edit imports this module lazily
    HEADER as _HEADER,
)
from walletctl.config.edit import (  # noqa: E402
    SaveResult,
    add_profile,
    remove_profile,
)
