"""Strict validation of a profiles document: its keys, value checks and error locations.

Loading is strict: an unknown key, a value of the wrong type or an invalid value is refused with
its location (``profiles.prod -> auth -> kee_env: unknown key``) so a typo never silently falls
back to a default. Values that could be secrets are never echoed in messages.

The checks of single values (text, URLs, file paths, ...) are :mod:`walletctl.config.values`;
this module holds the document's rules. Reading the file is
:mod:`walletctl.config.profiles_file`; both it and the in-place editor
(:mod:`walletctl.config.edit`) run :func:`parse_document` before anything is used or written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from walletctl.config.profile import (
    APPROVAL_HOURS,
    APPROVAL_OPERATIONS,
    AUTH_SCHEMES,
    ENVIRONMENTS,
    HISTORY_OPERATIONS,
    REDIRECT_KEYS,
    AuthSettings,
    HistorySettings,
    Profile,
)
from walletctl.config.values import (
    ALNUM,
    ValueChecker,
    at,
    kind,
    show,
    valid_header_name,
)
from walletctl.constants import DEFAULT_TIMEOUT, DUPLICATE_WINDOW, MAX_TIMEOUT, PATH_KEYS

__all__ = [
    "AUTH_KEYS",
    "PROFILE_KEYS",
    "REQUIRED_PROFILE_KEYS",
    "TOP_LEVEL_KEYS",
    "parse_document",
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
    "environment",
    "auth",
    "paths",
    "redirects",
    "history",
)
HISTORY_KEYS: tuple[str, ...] = ("enabled", "path", "url", "require_reason", "limits",
                                 "duplicate_window", "approvals", "approval_hours")
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


def valid_profile_name(name: str) -> bool:
    """Letters, digits, '-' and '_', at most 64, starting with a letter or digit."""
    return 0 < len(name) <= 64 and name[0] in ALNUM and all(c in ALNUM or c in "-_" for c in name)


class _Parser(ValueChecker):
    """Validates one TOML document; every failure is a ConfigError with its location."""

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
                self.fail(at(loc, key), "missing (required)")
        amount_format = table.get("amount_format", "minor")
        if amount_format not in AMOUNT_FORMATS:
            self.fail(
                at(loc, "amount_format"),
                f"must be 'minor' or 'decimal', not {show(amount_format)}",
            )
        currency = None
        if "currency" in table:
            raw = self.text(table["currency"], at(loc, "currency"))
            from walletctl.models.money import check_currency

            try:
                currency = check_currency(raw)
            except ValueError as exc:
                self.fail(at(loc, "currency"), str(exc))
        timeout = DEFAULT_TIMEOUT
        if "timeout" in table:
            value = table["timeout"]
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.fail(at(loc, "timeout"), f"must be a number of seconds, not {kind(value)}")
            if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
                self.fail(at(loc, "timeout"),
                          f"must be greater than 0 and at most {MAX_TIMEOUT:g} seconds")
            timeout = float(value)
        timezone = None
        if "timezone" in table:
            timezone = self.text(table["timezone"], at(loc, "timezone"))
            _check_timezone(self, timezone, at(loc, "timezone"))
        environment = table.get("environment", "test")
        if environment not in ENVIRONMENTS:
            self.fail(at(loc, "environment"),
                      f"must be 'production' or 'test', not {show(environment)}")
        auth = self.auth(self.sub(table, "auth", loc), at(loc, "auth"))
        paths = self.paths(self.sub(table, "paths", loc), at(loc, "paths"))
        redirects = self.redirects(self.sub(table, "redirects", loc), at(loc, "redirects"))
        history = self.history(self.sub(table, "history", loc), at(loc, "history"))
        return Profile(
            name=name,
            base_url=self.url(table["base_url"], at(loc, "base_url")),
            merchant_id=self.text(table["merchant_id"], at(loc, "merchant_id"), 255),
            store_id=self.text(table["store_id"], at(loc, "store_id"), 255),
            user_id=self.text(table["user_id"], at(loc, "user_id"), 255),
            amount_format=amount_format,
            currency=currency,
            timeout=timeout,
            timezone=timezone,
            auth=auth,
            paths=paths,
            redirects=redirects,
            history=history,
            environment=environment,
            source=self.path,
        )

    def auth(self, table: dict[str, Any], loc: str) -> AuthSettings:
        self.check_keys(table, AUTH_KEYS, loc)
        scheme = "PublicApiKey"
        if "scheme" in table:
            raw = self.text(table["scheme"], at(loc, "scheme"))
            match = [s for s in AUTH_SCHEMES if s.lower() == raw.lower()]
            if not match:
                self.fail(
                    at(loc, "scheme"),
                    f"must be one of {', '.join(AUTH_SCHEMES)}",
                )
            scheme = match[0]
        key_env = (
            self.env_name(table["key_env"], at(loc, "key_env")) if "key_env" in table else None
        )
        key_file = (
            self.file_path(table["key_file"], at(loc, "key_file"))
            if "key_file" in table
            else None
        )
        keyring = table.get("keyring", False)
        if not isinstance(keyring, bool):
            self.fail(at(loc, "keyring"), f"must be true or false, not {kind(keyring)}")
        key = None
        if "key" in table:
            key = table["key"]
            if not isinstance(key, str):
                self.fail(at(loc, "key"), f"must be a string, not {kind(key)}")
            if not key.strip():
                self.fail(at(loc, "key"), "must not be empty")
        header = None
        if "header" in table:
            header = self.text(table["header"], at(loc, "header"))
            if not valid_header_name(header):
                self.fail(at(loc, "header"), "must be an HTTP header name such as X-Api-Key")
            if scheme != "header":
                self.fail(
                    at(loc, "header"),
                    'is only used with scheme = "header"',
                    f'remove it, or set scheme = "header" (scheme is now {scheme!r})',
                )
        elif scheme == "header":
            self.fail(
                at(loc, "header"),
                'missing (required when scheme = "header")',
                'add header = "X-Api-Key" (the name of the header carrying the key)',
            )
        username = None
        if "username" in table:
            username = self.text(table["username"], at(loc, "username"))
            if ":" in username:
                self.fail(at(loc, "username"), "must not contain ':' (Basic auth)")
        service_env = (
            self.env_name(table["service_secret_env"], at(loc, "service_secret_env"))
            if "service_secret_env" in table
            else None
        )
        service_file = (
            self.file_path(table["service_secret_file"], at(loc, "service_secret_file"))
            if "service_secret_file" in table
            else None
        )
        service_inline = None
        if "service_secret" in table:
            service_inline = table["service_secret"]
            if not isinstance(service_inline, str) or not service_inline.strip():
                self.fail(at(loc, "service_secret"), "must be a non-empty string")
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
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            self.fail(at(loc, "enabled"), f"must be true or false, not {kind(enabled)}")
        path = self.file_path(table["path"], at(loc, "path")) if "path" in table else None
        url = self.db_url(table["url"], at(loc, "url")) if "url" in table else None
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
        hours = table.get("approval_hours", APPROVAL_HOURS)
        if not isinstance(hours, int) or isinstance(hours, bool) or not 1 <= hours <= 720:
            self.fail(at(loc, "approval_hours"),
                      "must be a whole number of hours from 1 to 720 (30 days)")
        window = table.get("duplicate_window", DUPLICATE_WINDOW)
        if (not isinstance(window, int) or isinstance(window, bool)
                or not 0 <= window <= 10080):
            self.fail(at(loc, "duplicate_window"),
                      "must be a whole number of minutes from 0 (off) to 10080 (a week)")
        return HistorySettings(
            enabled=enabled, path=path, url=url, require_reason=tuple(raw), limits=limits,
            duplicate_window=window, approvals=approvals, approval_hours=hours,
        )

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


def _check_timezone(parser: _Parser, name: str, location: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        parser.fail(
            location, f"unknown time zone {name!r}", "use an IANA name such as Europe/Paris"
        )


def parse_document(document: dict[str, Any], path: Path) -> tuple[str | None, dict[str, Profile]]:
    """Validate a TOML document (as dicts); returns (default_profile, profiles by name)."""
    return _Parser(path).document(document)
