"""Checks of single values of a profiles document, each failing with the value's location.

:class:`ValueChecker` holds the checks every table uses (known keys, sub-tables, text, URLs,
environment variable names, file paths, database URLs); :mod:`walletctl.config.validate`
builds the document's own rules (profiles, auth, history, ...) on top of it. A failure is a
:class:`~walletctl.errors.ConfigError` naming the location (``profiles.prod -> auth ->
key_env``) and the file; values that could be secrets are never echoed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from walletctl.config.profile import display_path
from walletctl.errors import ConfigError

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


class ValueChecker:
    """The value checks of one TOML document; every failure is a ConfigError with its
    location and the file's name."""

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
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else "allowed keys: " + ", ".join(allowed)
                )
                self.fail(at(location, str(key)), "unknown key", hint)

    def table(self, value: Any, location: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(location, f"must be a table, not {kind(value)}")
        return value

    def sub(self, table: dict[str, Any], key: str, location: str) -> dict[str, Any]:
        """The optional sub-table ``key`` of ``table`` (empty when absent)."""
        return self.table(table.get(key, {}), at(location, key))

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


def kind(value: Any) -> str:
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


def show(value: Any) -> str:
    """A short rendering of a non-secret value for messages."""
    if isinstance(value, str):
        return repr(value[:40])
    return kind(value)
