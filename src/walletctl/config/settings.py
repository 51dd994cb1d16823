"""One profile setting by its dotted key (``currency``, ``auth.key_env``,
``history.approvals.refund``): which keys exist, and a command-line VALUE as its TOML value.

Used by ``walletctl profile set/unset``; whether a value is *valid* is decided by the loader's
own rules (:func:`walletctl.config.validate.parse_document`) after the edit, never here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from walletctl.config.profile import (
    APPROVAL_OPERATIONS,
    HISTORY_OPERATIONS,
    REDIRECT_KEYS,
)
from walletctl.config.validate import AUTH_KEYS, HISTORY_KEYS, PROFILE_KEYS
from walletctl.constants import PATH_KEYS
from walletctl.errors import UsageError

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
    keys: list[str] = []
    for table, names in TABLES.items():
        for name in names:
            full = f"{table}.{name}" if table else name
            if full not in TABLES:
                keys.append(full)
    return keys


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
