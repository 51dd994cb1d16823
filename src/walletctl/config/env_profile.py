"""A whole profile from the environment alone (docs/ci.md's CI contract): no file.

When no profile is named (``-p`` / ``$WALLETCTL_PROFILE``), no profiles file is named
(``--config`` / ``$WALLETCTL_CONFIG``) and ``$WALLETCTL_BASE_URL`` is set, the profile is
built from ``WALLETCTL_*`` variables and validated by the same rules as a file's
(config.profile's parser); its name is ``env`` (``-p env`` selects it too when no file is
named and the default one has no profile of that name: profiles_file.uses_environment).
The API key is read from ``$WALLETCTL_API_KEY`` when a request needs it (``auth.key_env``):
never copied, never shown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from walletctl.config.profile import REDIRECT_KEYS, Profile, parse_document
from walletctl.constants import Env
from walletctl.errors import ConfigError

NAME = "env"
DEFAULT_USER_ID = "walletctl"
# profile key -> its variable (the redirect URLs: WALLETCTL_SUCCESS_URL, ...)
TEXT_KEYS: dict[str, str] = {
    "base_url": Env.BASE_URL, "merchant_id": Env.MERCHANT_ID, "store_id": Env.STORE_ID,
    "user_id": Env.USER_ID, "currency": Env.CURRENCY, "amount_format": Env.AMOUNT_FORMAT,
    "environment": Env.ENVIRONMENT,
}
REDIRECT_VARS: dict[str, str] = {k: Env.REDIRECT_PREFIX + k.upper() for k in REDIRECT_KEYS}
REQUIRED = (Env.BASE_URL, Env.MERCHANT_ID, Env.STORE_ID, Env.API_KEY)
_PSEUDO_PATH = Path("<environment>")


def wanted(name: str | None, config: Path | None) -> bool:
    """The environment profile is the one to use: nothing named, ``$WALLETCTL_BASE_URL`` set."""
    return (name is None and not os.environ.get(Env.PROFILE) and config is None
            and not os.environ.get(Env.CONFIG) and bool(os.environ.get(Env.BASE_URL)))


def _value(var: str) -> str | None:
    value = os.environ.get(var)
    return None if value is None or value == "" else value


def from_environment() -> Profile:
    """The profile the ``WALLETCTL_*`` variables describe (ConfigError naming the variable)."""
    missing = [var for var in REQUIRED if not (_value(var) or "").strip()]
    if missing:
        raise ConfigError(f"{missing[0]} is not set: a profile from the environment needs "
                          + ", ".join(REQUIRED), location="environment",
                          hint="set them all, or name a profile (-p NAME, --config FILE)")
    table: dict[str, Any] = {k: v for k, var in TEXT_KEYS.items() if (v := _value(var))}
    table.setdefault("user_id", DEFAULT_USER_ID)
    if (timeout := _value(Env.TIMEOUT)) is not None:
        try:
            table["timeout"] = float(timeout)
        except ValueError:
            table["timeout"] = timeout  # the parser names the rule
    auth: dict[str, Any] = {"key_env": Env.API_KEY}
    if (scheme := _value(Env.AUTH_SCHEME)) is not None:
        auth["scheme"] = scheme
    if _value(Env.SERVICE_SECRET) is not None:
        auth["service_secret_env"] = Env.SERVICE_SECRET
    if _value(Env.SANDBOX_TOKEN) is not None:
        auth["sandbox_admin_token_env"] = Env.SANDBOX_TOKEN
    table["auth"] = auth
    redirects = {k: v for k, var in REDIRECT_VARS.items() if (v := _value(var))}
    if redirects:
        table["redirects"] = redirects
    try:
        _, profiles = parse_document({"profiles": {NAME: table}}, _PSEUDO_PATH)
    except ConfigError as exc:
        raise _named(exc) from None
    return profiles[NAME]


def is_env(profile: Profile) -> bool:
    """``profile`` was built from the environment (there is no file to ``profile set``)."""
    return profile.source == _PSEUDO_PATH


# a profile setting (as `profile set NAME KEY VALUE` spells it) -> the variable that sets it
SETTING_VARS: dict[str, str] = {
    **TEXT_KEYS, **{f"redirects.{k}": var for k, var in REDIRECT_VARS.items()},
    "timeout": Env.TIMEOUT, "auth.scheme": Env.AUTH_SCHEME,
    "auth.key_env": Env.API_KEY, "auth.service_secret_env": Env.SERVICE_SECRET,
    "auth.service_secret_file": Env.SERVICE_SECRET,
    "auth.sandbox_admin_token_env": Env.SANDBOX_TOKEN,
}


def setting_hint(key: str, value: str) -> str:
    """How an environment profile gets ``key``: the variable to set (never `profile set`)."""
    var = SETTING_VARS.get(key)
    if var is None:
        return ("a profile from the environment cannot set " + key + ": use a profiles file "
                "(--config FILE)")
    if key.endswith(("_env", "_file")):
        return f"set {var} (the profile from the environment reads it)"
    return f"set {var}={value}"


_KEY = re.compile(r"profiles\.env(?: -> (?:auth|redirects))? -> (\w+)")


def _named(exc: ConfigError) -> ConfigError:
    """The parser's error, its location written as the variable that gave the value."""
    where = exc.location or ""
    match = _KEY.fullmatch(where)
    key = match.group(1) if match else ""
    var = {**TEXT_KEYS, **REDIRECT_VARS, "timeout": Env.TIMEOUT, "scheme": Env.AUTH_SCHEME}.get(
        key, "environment")
    message = exc.message.removeprefix(f"{where}: ") if where else exc.message
    return ConfigError(message, location=var)
