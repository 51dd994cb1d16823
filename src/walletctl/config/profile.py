"""A profile: its settings as read from the TOML file (plain frozen dataclasses: cheap to
import), and the rules a profiles document passes (docs/profiles.md). Loading is strict: an
unknown key or a bad value is refused with its location (``profiles.prod -> auth -> kee_env:
unknown key``), and a value that could be a secret is never echoed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar
from urllib.parse import urlsplit

from walletctl.constants import DEFAULT_TIMEOUT, DUPLICATE_WINDOW, MAX_TIMEOUT, PATH_KEYS
from walletctl.errors import ConfigError
from walletctl.models.operations import HISTORY_NAMES, NAMES

# --------------------------------------------------------------------------- the settings

AuthScheme = Literal["PublicApiKey", "Bearer", "Basic", "header", "none"]
# What a profile's gateway is: "production" moves real money (docs/profiles.md, "Production
# profiles"): its confirmations say so, its batches need its name typed or --confirm-profile,
# the sandbox's admin commands and `smoke --embedded` refuse it.
Environment = Literal["test", "production"]
ENVIRONMENTS: tuple[str, ...] = ("production", "test")
AUTH_SCHEMES: tuple[str, ...] = ("PublicApiKey", "Bearer", "Basic", "header", "none")

# Keys of a profile's [redirects] table: defaults for checkout's redirectDetails.
REDIRECT_KEYS: tuple[str, ...] = ("return_url", "success_url", "pending_url", "error_url",
                                  "cancel_url", "refused_url")
# The ones a checkout needs, with the path on a shop's address each is given by
# `profile add --redirect-base URL` and a sandbox's profile.
NEEDED_REDIRECTS: dict[str, str] = {"success_url": "/ok", "error_url": "/error",
                                    "pending_url": "/pending", "return_url": "/cart"}


@dataclass(frozen=True)
class AuthSettings:
    """Where the secrets come from (tried in this order: ``config.secrets``)."""

    scheme: AuthScheme = "PublicApiKey"
    key_env: str | None = None
    key_file: Path | None = None  # absolute after loading (relative paths: to the profiles file)
    keyring: bool = False
    # An inline secret: accepted only when the profile file is 0600 (checked on loading the file).
    key: str | None = field(default=None, repr=False)
    header: str | None = None  # header name for scheme = "header"
    username: str | None = None  # Basic auth user (defaults to the profile's user_id)
    # Basic secret for the public key service (walletctl keys); same sources, optional.
    service_secret_env: str | None = None
    service_secret_file: Path | None = None
    # An inline service secret (e.g. a sandbox's documented one): 0600 files only, like ``key``.
    service_secret: str | None = field(default=None, repr=False)
    # The variable holding a walletctl sandbox's admin token (smoke's headless approvals)
    sandbox_admin_token_env: str | None = None

    @property
    def has_source(self) -> bool:
        """True when at least one secret source is configured."""
        return bool(self.key_env or self.key_file or self.keyring or self.key)

    @property
    def has_service_secret(self) -> bool:
        """True when the public key service's secret has a source of its own."""
        return bool(self.service_secret_env or self.service_secret_file or self.service_secret)


# Operations the history's rules ([history] require_reason / limits) can name.
HISTORY_OPERATIONS: tuple[str, ...] = HISTORY_NAMES
# ... and the ones that can need a second operator's approval ([history.approvals])
APPROVAL_OPERATIONS: tuple[str, ...] = NAMES
APPROVAL_HOURS = 24


@dataclass(frozen=True)
class HistorySettings:
    """``[profiles.NAME.history]``: the local audit log and the support desk's rules."""

    enabled: bool = True
    path: Path | None = None  # absolute after loading; WALLETCTL_AUDIT_LOG wins
    # a team's shared history: postgresql://ROLE@HOST:PORT/DB (no password; checked)
    url: str | None = None
    require_reason: tuple[str, ...] = ()  # operations that need --reason
    # operation -> amount in major units (text, a Decimal): above it, --reason and a typed
    # confirmation of the amount are required
    limits: dict[str, str] = field(default_factory=dict)
    # minutes: a movement identical to one made this recently is held as a likely duplicate
    duplicate_window: int = DUPLICATE_WINDOW
    # [history.approvals] operation -> amount in major units: above it a second operator
    # approves first (four eyes); an approval expires after approval_hours
    approvals: dict[str, str] = field(default_factory=dict)
    approval_hours: int = APPROVAL_HOURS


@dataclass(frozen=True)
class Profile:
    name: str
    base_url: str
    merchant_id: str
    store_id: str
    user_id: str
    amount_format: Literal["minor", "decimal"] = "minor"
    currency: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    timezone: str | None = None
    auth: AuthSettings = field(default_factory=AuthSettings)
    paths: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    history: HistorySettings = field(default_factory=HistorySettings)
    environment: Environment = "test"
    source: Path | None = None  # the file it came from (for error locations)

    @property
    def is_production(self) -> bool:
        return self.environment == "production"

    def path(self, key: str) -> str:
        return self.paths.get(key) or PATH_KEYS[key]

    def url(self, key: str) -> str:
        return self.base_url.rstrip("/") + self.path(key)

    @property
    def location(self) -> str:
        """The prefix of error locations for this profile: ``profiles.<name>``."""
        return f"profiles.{self.name}"


@dataclass(frozen=True)
class ProfilesFile:
    """One parsed and validated profiles file (``document``: the TOML as read)."""

    path: Path
    default_profile: str | None
    profiles: dict[str, Profile]
    document: dict[str, Any]
    mode: int | None = None  # st_mode & 0o777, None when the platform has no POSIX modes

    @property
    def holds_inline_secret(self) -> bool:
        return any(
            p.auth.key is not None or p.auth.service_secret is not None
            for p in self.profiles.values()
        )


def display_path(path: Path) -> str:
    """``path`` with the home directory shown as ``~`` (for messages people read)."""
    try:
        rel = path.relative_to(Path.home())
    except (RuntimeError, ValueError):  # no home directory, or not below it
        return str(path)
    return "~" if str(rel) == "." else f"~/{rel.as_posix()}"


# --------------------------------------------------------------------------- single values

_T = TypeVar("_T")


# Character classes checked without `re` (compiling patterns costs start-up time).
ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_TOKEN = ALNUM | frozenset("!#$%&'*+.^_`|~-")  # RFC 9110 token characters


def _valid_env_name(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and all(c in ALNUM or c == "_" for c in name)


def valid_header_name(name: str) -> bool:
    """An HTTP header name (RFC 9110 token characters)."""
    return bool(name) and all(c in _TOKEN for c in name)


_SEP = " -> "


def at(*parts: str) -> str:
    """A location from its parts: ``("profiles.a", "auth")`` -> ``profiles.a -> auth``."""
    return _SEP.join(p for p in parts if p)


_KINDS: tuple[tuple[type, str], ...] = ((bool, "a boolean"), (int, "an integer"),
                                        (float, "a float"), (str, "a string"),
                                        (dict, "a table"), (list, "an array"))


def kind(value: Any) -> str:
    """What a TOML value is, for messages (``an integer``, ``a table``...)."""
    for cls, name in _KINDS:
        if isinstance(value, cls):
            return name
    return "a date/time" if hasattr(value, "isoformat") else type(value).__name__


def show(value: Any) -> str:
    """A short rendering of a non-secret value for messages."""
    if isinstance(value, str):
        return repr(value[:40])
    return kind(value)


# --------------------------------------------------------------------------- the document


TOP_LEVEL_KEYS: tuple[str, ...] = ("default_profile", "profiles")
REQUIRED_PROFILE_KEYS: tuple[str, ...] = ("base_url", "merchant_id", "store_id", "user_id")
PROFILE_KEYS: tuple[str, ...] = (*REQUIRED_PROFILE_KEYS, "amount_format", "currency", "timeout",
                                 "timezone", "environment", "auth", "paths", "redirects",
                                 "history")
HISTORY_KEYS: tuple[str, ...] = tuple(f.name for f in fields(HistorySettings))
AUTH_KEYS: tuple[str, ...] = tuple(f.name for f in fields(AuthSettings))
AMOUNT_FORMATS: tuple[str, ...] = ("minor", "decimal")


NAME_RULE = "use letters, digits, '-' and '_' (at most 64, starting with a letter or digit)"


def valid_profile_name(name: str) -> bool:
    """Letters, digits, '-' and '_', at most 64, starting with a letter or digit."""
    return 0 < len(name) <= 64 and name[0] in ALNUM and all(c in ALNUM or c in "-_" for c in name)


class _Parser:
    """Validates one TOML document: the checks of single values every table uses, then the
    document's own rules (profiles, auth, history, ...); every failure is a ConfigError with
    its location and the file's name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base_dir = path.parent

    def fail(self, location: str, message: str, hint: str | None = None) -> NoReturn:
        where = f"in {display_path(self.path)}"
        raise ConfigError(message, location=location, hint=f"{hint} ({where})" if hint else where)

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...], location: str) -> None:
        for key in table:
            if key not in allowed:
                import difflib

                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"did you mean '{close[0]}'?" if close else "allowed keys: " + ", ".join(
                    allowed)
                self.fail(at(location, str(key)), "unknown key", hint)

    def table(self, value: Any, location: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(location, f"must be a table, not {kind(value)}")
        return value

    def optional(self, table: dict[str, Any], key: str, location: str,
                 check: Callable[[Any, str], _T]) -> _T | None:
        """``check`` of the value at ``key`` when ``table`` has it, else None."""
        return check(table[key], at(location, key)) if key in table else None

    def sub(self, table: dict[str, Any], key: str, location: str) -> dict[str, Any]:
        """The optional sub-table ``key`` of ``table`` (empty when absent)."""
        return self.table(table.get(key, {}), at(location, key))

    def flag(self, table: dict[str, Any], key: str, location: str, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            self.fail(at(location, key), f"must be true or false, not {kind(value)}")
        return value

    def text(self, value: Any, location: str, max_length: int = 1024) -> str:
        if not isinstance(value, str):
            self.fail(location, f"must be a string, not {kind(value)}")
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

    def db_url(self, value: Any, loc: str) -> str:
        from walletctl.config.dburl import DbUrlError, parse_db_url

        if not isinstance(value, str):
            self.fail(loc, f"must be a postgresql:// URL as a string, not {kind(value)}")
        try:
            return parse_db_url(value).text
        except DbUrlError as exc:
            self.fail(loc, str(exc))


    def document(self, doc: dict[str, Any]) -> tuple[str | None, dict[str, Profile]]:
        self.check_keys(doc, TOP_LEVEL_KEYS, "")
        raw_profiles = self.table(doc.get("profiles", {}), "profiles")
        profiles: dict[str, Profile] = {}
        for name, table in raw_profiles.items():
            location = f"profiles.{name}"
            if not valid_profile_name(name):
                self.fail(location, "bad profile name", NAME_RULE)
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
                self.fail(at(loc, key), "missing (required)")
        amount_format = self.one_of(table, "amount_format", loc, AMOUNT_FORMATS)
        currency = self.optional(table, "currency", loc, self.currency)
        timeout = self.optional(table, "timeout", loc, self.timeout) or DEFAULT_TIMEOUT
        timezone = self.optional(table, "timezone", loc, self.timezone)
        environment = self.one_of(table, "environment", loc, ENVIRONMENTS, default="test")
        auth = self.auth(self.sub(table, "auth", loc), at(loc, "auth"))
        paths = self.paths(self.sub(table, "paths", loc), at(loc, "paths"))
        redirects = self.redirects(self.sub(table, "redirects", loc), at(loc, "redirects"))
        history = self.history(self.sub(table, "history", loc), at(loc, "history"))
        return Profile(
            name=name, base_url=self.url(table["base_url"], at(loc, "base_url")),
            merchant_id=self.text(table["merchant_id"], at(loc, "merchant_id"), 255),
            store_id=self.text(table["store_id"], at(loc, "store_id"), 255),
            user_id=self.text(table["user_id"], at(loc, "user_id"), 255),
            amount_format=amount_format,  # type: ignore[arg-type]  # one of AMOUNT_FORMATS
            currency=currency, timeout=timeout, timezone=timezone, auth=auth, paths=paths,
            redirects=redirects, history=history,
            environment=environment,  # type: ignore[arg-type]  # one of ENVIRONMENTS
            source=self.path)

    def one_of(self, table: dict[str, Any], key: str, loc: str, choices: tuple[str, ...],
               default: str | None = None) -> str:
        """``key``'s value, one of ``choices`` (absent: ``default``, else the first)."""
        value = table.get(key, default or choices[0])
        if value not in choices:
            self.fail(at(loc, key), f"must be {' or '.join(map(repr, choices))}, "
                                    f"not {show(value)}")
        return str(value)

    def timeout(self, value: Any, location: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(location, f"must be a number of seconds, not {kind(value)}")
        if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
            self.fail(location, f"must be greater than 0 and at most {MAX_TIMEOUT:g} seconds")
        return float(value)

    def currency(self, value: Any, location: str) -> str:
        from walletctl.models.money import check_currency

        try:
            return check_currency(self.text(value, location))
        except ValueError as exc:
            self.fail(location, str(exc))

    def timezone(self, value: Any, location: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        name = self.text(value, location)
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(location, f"unknown time zone {name!r}",
                      "use an IANA name such as Europe/Paris")
        return name

    def auth(self, table: dict[str, Any], loc: str) -> AuthSettings:
        self.check_keys(table, AUTH_KEYS, loc)
        scheme = "PublicApiKey"
        if "scheme" in table:
            raw = self.text(table["scheme"], at(loc, "scheme"))
            match = [s for s in AUTH_SCHEMES if s.lower() == raw.lower()]
            if not match:
                self.fail(at(loc, "scheme"), f"must be one of {', '.join(AUTH_SCHEMES)}")
            scheme = match[0]
        key_env = self.optional(table, "key_env", loc, self.env_name)
        key_file = self.optional(table, "key_file", loc, self.file_path)
        keyring = self.flag(table, "keyring", loc, False)
        key = None
        if "key" in table:
            key = table["key"]
            if not isinstance(key, str):
                self.fail(at(loc, "key"), f"must be a string, not {kind(key)}")
            if not key.strip():
                self.fail(at(loc, "key"), "must not be empty")
        header = self.header(table, loc, scheme)
        username = None
        if "username" in table:
            username = self.text(table["username"], at(loc, "username"))
            if ":" in username:
                self.fail(at(loc, "username"), "must not contain ':' (Basic auth)")
        service_env = self.optional(table, "service_secret_env", loc, self.env_name)
        service_file = self.optional(table, "service_secret_file", loc, self.file_path)
        service_inline = None
        if "service_secret" in table:
            service_inline = table["service_secret"]
            if not isinstance(service_inline, str) or not service_inline.strip():
                self.fail(at(loc, "service_secret"), "must be a non-empty string")
        admin_env = self.optional(table, "sandbox_admin_token_env", loc, self.env_name)
        return AuthSettings(
            scheme=scheme,  # type: ignore[arg-type]  # checked against AUTH_SCHEMES above
            key_env=key_env, key_file=key_file, keyring=keyring, key=key, header=header,
            username=username, service_secret_env=service_env,
            service_secret_file=service_file, service_secret=service_inline,
            sandbox_admin_token_env=admin_env)

    def header(self, table: dict[str, Any], loc: str, scheme: str) -> str | None:
        """The header's name: given exactly when the scheme is "header"."""
        if "header" not in table:
            if scheme == "header":
                self.fail(at(loc, "header"), 'missing (required when scheme = "header")',
                          'add header = "X-Api-Key" (the name of the header carrying the key)')
            return None
        header = self.text(table["header"], at(loc, "header"))
        if not valid_header_name(header):
            self.fail(at(loc, "header"), "must be an HTTP header name such as X-Api-Key")
        if scheme != "header":
            self.fail(at(loc, "header"), 'is only used with scheme = "header"',
                      f'remove it, or set scheme = "header" (scheme is now {scheme!r})')
        return header

    def paths(self, table: dict[str, Any], loc: str) -> dict[str, str]:
        self.check_keys(table, tuple(PATH_KEYS), loc)
        out: dict[str, str] = {}
        for key, value in table.items():
            text = self.text(value, at(loc, key))
            if not text.startswith("/") or " " in text or "?" in text or "#" in text:
                self.fail(
                    at(loc, key),
                    f"must be a URL path starting with '/', such as {PATH_KEYS[key]}",
                )
            out[key] = text
        return out

    def redirects(self, table: dict[str, Any], loc: str) -> dict[str, str]:
        self.check_keys(table, REDIRECT_KEYS, loc)
        return {key: self.url(value, at(loc, key)) for key, value in table.items()}


    def history(self, table: dict[str, Any], loc: str) -> HistorySettings:
        self.check_keys(table, HISTORY_KEYS, loc)
        enabled = self.flag(table, "enabled", loc, True)
        path = self.optional(table, "path", loc, self.file_path)
        url = self.optional(table, "url", loc, self.db_url)
        if url is not None and (path is not None or enabled is False):
            self.fail(at(loc, "url"), "a shared history is the whole history: remove "
                      + ("path" if path is not None else "enabled = false") + " or url")
        ops = HISTORY_OPERATIONS
        raw = table.get("require_reason", [])
        if raw is True or raw is False:
            raw = list(ops) if raw else []
        if not isinstance(raw, list) or any(op not in ops for op in raw):
            self.fail(
                at(loc, "require_reason"),
                f"must be true, false or a list of operations ({', '.join(ops)})",
            )
        limits = self.amounts(table, "limits", loc, ops)
        approvals = self.amounts(table, "approvals", loc, APPROVAL_OPERATIONS)
        hours = self.whole(table, "approval_hours", loc, APPROVAL_HOURS, 1, 720,
                           "must be a whole number of hours from 1 to 720 (30 days)")
        window = self.whole(table, "duplicate_window", loc, DUPLICATE_WINDOW, 0, 10080,
                            "must be a whole number of minutes from 0 (off) to 10080 (a week)")
        return HistorySettings(
            enabled=enabled, path=path, url=url, require_reason=tuple(raw), limits=limits,
            duplicate_window=window, approvals=approvals, approval_hours=hours,
        )

    def whole(self, table: dict[str, Any], key: str, loc: str, default: int, low: int,
              high: int, rule: str) -> int:
        value = table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            self.fail(at(loc, key), rule)
        return value

    def amounts(self, table: dict[str, Any], key: str, loc: str,
                ops: tuple[str, ...]) -> dict[str, str]:
        """A table of operation -> amount in major units (``limits``, ``approvals``)."""
        found: dict[str, str] = {}
        for op, value in self.sub(table, key, loc).items():
            where = at(loc, key, str(op))
            if op not in ops:
                self.fail(where, f"not an operation; one of {', '.join(ops)}")
            text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
            if not isinstance(text, str) or not _is_amount(text):
                self.fail(where, 'must be an amount in major units as a string, e.g. "100.00"')
            found[op] = text
        return found


def _is_amount(text: str) -> bool:
    whole, _, frac = text.partition(".")
    return 0 < len(text) <= 20 and whole.isascii() and whole.isdigit() and (
        frac == "" or (frac.isascii() and frac.isdigit())
    )


def parse_document(document: dict[str, Any], path: Path) -> tuple[str | None, dict[str, Profile]]:
    """Validate a TOML document (as dicts); returns (default_profile, profiles by name)."""
    return _Parser(path).document(document)
