"""Where walletctl keeps the secrets it saves: the system keyring or a 0600 file.

``walletctl keys --save`` stores the fetched keys with :func:`save_secret`: in the system
keyring (service ``walletctl``, user :func:`keyring_user`) when the profile sets
``auth.keyring = true``, else in :func:`saved_secret_path` beside the profiles file. Reading
them back, and the order in which a profile's secret is looked for, is
:mod:`walletctl.config.secrets`. The optional ``keyring`` package is imported only here.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from walletctl.config.location import config_path
from walletctl.config.private import write_private
from walletctl.config.profile import Profile, display_path
from walletctl.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import SecretStr

__all__ = [
    "KEYRING_SERVICE",
    "check_name",
    "keyring_get",
    "keyring_user",
    "save_secret",
    "saved_secret_path",
]

KEYRING_SERVICE = "walletctl"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


# --------------------------------------------------------------------------- keyring


def _keyring() -> ModuleType:
    """Import the optional ``keyring`` package, or explain how to get it."""
    try:
        import keyring
    except ImportError:
        raise ConfigError(
            "keyring support is not installed",
            hint="install the keyring package (pip install keyring), or use key_env / key_file",
        ) from None
    return keyring


def keyring_user(profile: Profile, name: str = "key") -> str:
    """The keyring user name of a profile's secret: ``<profile>`` or ``<profile>.<name>``."""
    return profile.name if name == "key" else f"{profile.name}.{name}"


def keyring_get(profile: Profile, name: str) -> str | None:
    """The keyring entry of a profile's secret ``name`` (None when there is none)."""
    kr = _keyring()
    try:
        return kr.get_password(KEYRING_SERVICE, keyring_user(profile, name))  # type: ignore[no-any-return]
    except Exception as exc:  # keyring raises backend-specific errors
        raise _keyring_error(exc) from None


def _keyring_error(exc: Exception) -> ConfigError:
    if type(exc).__name__ == "NoKeyringError":
        return ConfigError(
            "no keyring backend is available on this system",
            hint="install a keyring backend (e.g. Secret Service), or use key_env / key_file",
        )
    return ConfigError(f"keyring failed ({type(exc).__name__})")


# --------------------------------------------------------------------------- saved secrets


def check_name(name: str) -> None:
    """Refuse a bad secret name (ValueError): short lower-case letters, digits and '_'."""
    if not (0 < len(name) <= 32 and name[0].isalpha() and all(c in _NAME_CHARS for c in name)):
        raise ValueError(f"bad secret name {name!r}: use lower-case letters, digits and '_'")


def saved_secret_path(profile: Profile, name: str = "key") -> Path:
    """The file :func:`save_secret` uses when the profile has no keyring.

    Beside the profiles file: ``<dir>/<profile>.key`` for ``name="key"`` (the API key that
    :func:`resolve_secret` falls back to), ``<dir>/<profile>.<name>.key`` otherwise.
    """
    check_name(name)
    base = profile.source.parent if profile.source is not None else config_path(None).parent
    filename = f"{profile.name}.key" if name == "key" else f"{profile.name}.{name}.key"
    return base / filename


def save_secret(profile: Profile, name: str, value: str | SecretStr) -> str:
    """Store a secret in the profile's own secret store; returns where (safe to print).

    For ``walletctl keys --save``. ``name`` is a short lower-case label: ``"key"`` is the API
    key used by the profile's auth (the one :func:`resolve_secret` finds as its "saved" source
    or, with ``auth.keyring = true``, as its keyring entry); other names (``"encryption_key"``,
    ...) are kept beside it and read back with :func:`load_saved_secret`.

    Where: the system keyring (service ``walletctl``, user :func:`keyring_user`) when the
    profile sets ``auth.keyring = true``; otherwise :func:`saved_secret_path`, written
    atomically with mode 0600 (directory 0700 when created). An existing entry is replaced.

    Note that a secret configured via ``key_env``/``key_file``/inline ``key`` takes precedence
    over a saved ``"key"`` (resolution order). Raises ConfigError when the keyring is missing or
    fails, ValueError for a bad ``name``. The value never appears in messages.
    """
    check_name(name)
    secret = value.get_secret_value() if not isinstance(value, str) else value
    if not secret or any(ord(c) < 32 or ord(c) == 127 for c in secret):
        raise ValueError("the secret is empty or contains control characters")
    if profile.auth.keyring:
        kr = _keyring()
        user = keyring_user(profile, name)
        try:
            kr.set_password(KEYRING_SERVICE, user, secret)
        except Exception as exc:
            raise _keyring_error(exc) from None
        return f"keyring {KEYRING_SERVICE}/{user}"
    path = saved_secret_path(profile, name)
    try:
        write_private(path, (secret + "\n").encode("utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"cannot save the {name} to {display_path(path)}: "
            f"{exc.strerror or type(exc).__name__}"
        ) from None
    return f"file {display_path(path)} (0600)"
