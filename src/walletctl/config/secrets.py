"""Where a profile's secret comes from (docs/profiles.md, "Secret resolution order": one
walk of its sources, :func:`_sources`), and the auth headers built from it. Secrets stay
``pydantic.SecretStr`` and never appear in messages; ``keyring`` is imported only here.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from walletctl.config.profile import Profile, display_path
from walletctl.config.profiles_file import check_private, config_path, file_mode, write_private
from walletctl.constants import Env
from walletctl.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import SecretStr

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


# --------------------------------------------------------------------------- sources


def _secret(value: str) -> SecretStr:
    from pydantic import SecretStr

    return SecretStr(value)


@dataclass(frozen=True)
class _Miss:
    location: str
    reason: str
    hint: str | None = None


def _clean(value: str, location: str) -> str:
    text = value.strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ConfigError(
            "the secret contains control characters (not usable in an HTTP header)",
            location=location,
        )
    return text


def read_secret_command(var: str) -> str:
    """The command that sets ``var`` from the keyboard without echoing it or leaving it in the
    shell's history, in the user's shell ($SHELL): fish has its own ``read`` flags."""
    if Path(os.environ.get("SHELL", "")).name == "fish":
        return f"read -sx {var}"
    return f"read -rs {var} && export {var}"


def _from_env(var: str, location: str) -> str | _Miss:
    value = os.environ.get(var)
    if value is None or not value.strip():
        unset = value is None
        return _Miss(location, f"environment variable {var} is {'not set' if unset else 'empty'}",
                     f"{'set it' if unset else 'give it the secret'} without leaving it in your "
                     f"shell history: `{read_secret_command(var)}`")
    return _clean(value, location)


def _from_file(path: Path, location: str) -> str | _Miss:
    if not path.exists():
        return _Miss(location, f"file {path} does not exist",
                     f"create it readable by you only: `(umask 077; cat > {path})`")
    if not path.is_file():
        raise ConfigError(f"{path} is not a regular file", location=location)
    check_private(path, location=location)
    try:
        value = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path} ({type(exc).__name__})", location=location) from None
    if not value.strip():
        return _Miss(location, f"file {path} is empty")
    return _clean(value, location)


def _from_keyring(profile: Profile, name: str, location: str) -> str | _Miss:
    user = keyring_user(profile, name)
    try:
        value = keyring_get(profile, name)
    except ConfigError as exc:
        return _Miss(location, exc.message, exc.hint)
    if not value:
        return _Miss(location, f"no keyring entry {KEYRING_SERVICE}/{user}",
                     f"store it with `keyring set {KEYRING_SERVICE} {user}` "
                     "(prompts for the value)")
    return _clean(value, location)


def _from_inline(profile: Profile, location: str) -> str:
    assert profile.auth.key is not None
    if profile.source is not None and profile.source.exists():
        # profiles_file.load_file already checked; re-checked for profiles built by other means.
        check_private(profile.source)
    return _clean(profile.auth.key, location)


class _Source(NamedTuple):
    label: str  # the source a value came from, as `profile check` names it
    read: Callable[[], str | _Miss]  # its value (never empty), or why it gave none
    shown: str  # as `profile show` describes it (never the value)


def _sources(profile: Profile, *, service: bool = False) -> list[_Source]:
    """The configured sources of the API secret (``service``: the public key service's own
    secret), in resolution order."""
    auth, loc = profile.auth, f"{profile.location} -> auth"
    name, env, path = (("service_secret", auth.service_secret_env, auth.service_secret_file)
                       if service else ("key", auth.key_env, auth.key_file))
    found: list[_Source] = []
    if env:
        state = "set" if os.environ.get(env, "").strip() else "not set"
        found.append(_Source(f"env {env}", partial(_from_env, env, f"{loc} -> {name}_env"),
                             f"env {env} ({state})"))
    if path:
        found.append(_Source(f"file {display_path(path)}", partial(
            _from_file, path, f"{loc} -> {name}_file"), _describe_file(path, "file ")))
    if service and auth.service_secret is not None:
        found.append(_Source("inline", partial(
            _clean, auth.service_secret, f"{loc} -> service_secret"), "inline"))
    if service:
        return found
    if auth.keyring:
        label = f"keyring {KEYRING_SERVICE}/{keyring_user(profile)}"
        found.append(_Source(label, partial(_from_keyring, profile, "key", f"{loc} -> keyring"),
                             label))
    if auth.key is not None:
        mode = file_mode(profile.source) if profile.source and profile.source.exists() else None
        found.append(_Source("inline key", partial(_from_inline, profile, f"{loc} -> key"),
                             "inline" if mode is None else f"inline (file is {mode:04o})"))
    elif not auth.keyring and (saved := saved_secret_path(profile, "key")).exists():
        found.append(_Source(f"saved file {display_path(saved)}", partial(
            _from_file, saved, f"{loc} (saved secret)"), _describe_file(saved, "saved file ")))
    return found


def _first(sources: list[_Source], misses: list[_Miss]) -> tuple[str, str] | None:
    """(value, label) of the first source that has a value; the others' misses kept."""
    for source in sources:
        got = source.read()
        if isinstance(got, str):
            return got, source.label
        misses.append(got)
    return None


def resolve_secret(profile: Profile) -> SecretStr:
    """The profile's API secret from the first source that has it; ConfigError naming each
    source and why it gave nothing, or the file that is too open."""
    return resolve_secret_with_source(profile)[0]


def resolve_secret_with_source(profile: Profile) -> tuple[SecretStr, str]:
    """Like :func:`resolve_secret`, plus a label of the source used (``env NAME``, ...)."""
    misses: list[_Miss] = []
    found = _first(_sources(profile), misses)
    if found is not None:
        return _secret(found[0]), found[1]
    loc = f"{profile.location} -> auth"
    if not misses:
        raise ConfigError(
            "no secret configured",
            location=loc,
            hint="set key_env, key_file or keyring = true in the [auth] table "
            '(or scheme = "none" for a gateway without auth)',
        )
    raise _none_found(misses, loc, "secret")


def _none_found(misses: list[_Miss], loc: str, what: str) -> ConfigError:
    """The error naming every configured source of ``what`` and why it gave nothing."""
    if len(misses) == 1:
        return ConfigError(misses[0].reason, location=misses[0].location, hint=misses[0].hint)
    tried = "; ".join(f"{m.location.removeprefix(loc + ' -> ')}: {m.reason}" for m in misses)
    return ConfigError(f"no {what} found ({tried})", location=loc, hint=misses[0].hint)


# --------------------------------------------------------------------------- headers


def _basic(user: str, secret: str, location: str) -> str:
    if ":" in user:
        raise ConfigError(
            f"Basic auth user {user!r} must not contain ':'",
            location=location,
            hint="set auth.username",
        )
    token = base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
    return f"Basic {token}"


def auth_header(profile: Profile) -> tuple[str, str] | None:
    """The (header name, value) that authenticates gateway calls (None for scheme "none");
    the value holds the secret: mask it before showing it anywhere."""
    auth = profile.auth
    if auth.scheme == "none":
        return None
    secret = resolve_secret(profile).get_secret_value()
    if auth.scheme in ("PublicApiKey", "Bearer"):
        return ("Authorization", f"{auth.scheme} {secret}")
    if auth.scheme == "Basic":
        user = auth.username or profile.user_id
        return ("Authorization", _basic(user, secret, f"{profile.location} -> user_id"))
    if auth.scheme == "header":
        if not auth.header:
            raise ConfigError(
                'missing (required when scheme = "header")',
                location=f"{profile.location} -> auth -> header",
            )
        return (auth.header, secret)
    raise ConfigError(f"unknown scheme {auth.scheme!r}", location=f"{profile.location} -> auth")


def service_basic_auth(profile: Profile) -> tuple[str, str] | None:
    """``("Authorization", "Basic base64(user:secret)")`` for the public key service: the
    service secret's sources, else the API secret; None when neither is configured and the
    scheme is "none"."""
    auth = profile.auth
    misses: list[_Miss] = []
    found = _first(_sources(profile, service=True), misses)
    if found is None and misses:
        raise _none_found(misses, f"{profile.location} -> auth", "service secret")
    if found is None and auth.scheme == "none" and not auth.has_source:
        return None
    secret = found[0] if found else resolve_secret(profile).get_secret_value()
    return ("Authorization", _basic(auth.username or profile.user_id, secret,
                                    f"{profile.location} -> user_id"))


def sandbox_admin_token(profile: Profile) -> str | None:
    """A walletctl sandbox's admin token for ``profile``: the variable its
    ``auth.sandbox_admin_token_env`` names (a ConfigError when unset or empty), else
    ``$WALLETCTL_SANDBOX_TOKEN``, else None."""
    name = profile.auth.sandbox_admin_token_env
    if name is None:
        value = os.environ.get(Env.SANDBOX_TOKEN, "").strip()
        return value or None
    got = _from_env(name, f"{profile.location} -> auth -> sandbox_admin_token_env")
    if isinstance(got, _Miss):
        raise ConfigError(got.reason, location=got.location, hint=got.hint)
    return got


# --------------------------------------------------------------------------- saved secrets


def check_name(name: str) -> None:
    """Refuse a bad secret name (ValueError): short lower-case letters, digits and '_'."""
    if not (0 < len(name) <= 32 and name[0].isalpha() and all(c in _NAME_CHARS for c in name)):
        raise ValueError(f"bad secret name {name!r}: use lower-case letters, digits and '_'")


def saved_secret_path(profile: Profile, name: str = "key") -> Path:
    """The file :func:`save_secret` uses without a keyring, beside the profiles file:
    ``<profile>.key`` for the API key, ``<profile>.<name>.key`` otherwise."""
    check_name(name)
    base = profile.source.parent if profile.source is not None else config_path(None).parent
    filename = f"{profile.name}.key" if name == "key" else f"{profile.name}.{name}.key"
    return base / filename


def save_secret(profile: Profile, name: str, value: str | SecretStr) -> str:
    """Store (or replace) a secret in the profile's keyring, else its saved file; returns
    where (safe to print). ``"key"`` is the API key :func:`resolve_secret` falls back to."""
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


# --------------------------------------------------------------------------- description


def _describe_file(path: Path, what: str) -> str:
    shown = what + display_path(path)
    if not path.exists():
        return f"{shown} (missing)"
    mode = file_mode(path)
    if mode is None:
        return shown
    return f"{shown} ({mode:04o}{', too open' if mode & 0o077 else ''})"


def describe_secret_source(profile: Profile) -> str:
    """Where the secret would come from, in resolution order (``env NAME (set), then file
    PATH (0600)``); never the secret, and the keyring is not queried (it could prompt)."""
    parts = [source.shown for source in _sources(profile)]
    if not parts:
        return "none (scheme none)" if profile.auth.scheme == "none" else "not configured"
    return ", then ".join(parts)


def describe_service_secret_source(profile: Profile) -> str:
    """Where the public key service's Basic secret comes from (never the secret)."""
    parts = [source.shown for source in _sources(profile, service=True)]
    return ", then ".join(parts) if parts else "same as the API secret"
