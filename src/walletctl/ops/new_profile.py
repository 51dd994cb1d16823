"""``walletctl profile add``: the profile's table from the flags (what a flag leaves out
:class:`Prompts` may ask; a secret never: its source is recorded), saved, and notes on what it
can do and the one step left.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.config.profile import NEEDED_REDIRECTS
from walletctl.config.profiles_file import add_profile, file_mode, load_file
from walletctl.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from walletctl.config.profile import AuthSettings

# Flags of `profile add` by the profile key they set (to report bad values as flag errors).
FLAG_FOR_KEY = {
    **{k: f"--{k.replace('_', '-')}" for k in (
        "base_url", "merchant_id", "store_id", "user_id", "amount_format", "currency", "timeout",
        "timezone", "environment")},
    "auth -> scheme": "--auth-scheme",
    **{f"auth -> {k}": f"--{k.replace('_', '-')}" for k in (
        "header", "username", "key_env", "key_file", "service_secret_env", "service_secret_file")},
    **{f"redirects -> {k}": f"--{k.replace('_', '-')}" for k in (
        "success_url", "error_url", "pending_url", "return_url", "cancel_url", "refused_url")},
    **{f"paths -> {k}": "--path" for k in (
        "checkout", "apm_transactions", "public_keys", "payment_accounts", "transactions")},
}
REQUIRED = (("base_url", "Gateway base URL"), ("merchant_id", "merchantId"),
            ("store_id", "storeId"),
            ("user_id", "userId, the service user too"))


@dataclass(frozen=True)
class NewProfile:
    """The flags of ``profile add`` (None: not given)."""

    name: str
    ids: dict[str, str | None]  # base_url, merchant_id, store_id, user_id
    amount_format: str = "minor"
    currency: str | None = None
    timeout: float | None = None
    timezone: str | None = None
    environment: str | None = None
    auth_scheme: str = "PublicApiKey"
    header: str | None = None
    username: str | None = None
    key_env: str | None = None
    key_file: Path | None = None
    keyring: bool = False
    service_secret_env: str | None = None
    service_secret_file: Path | None = None
    redirect_base: str | None = None
    redirects: dict[str, str | None] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    default: bool = False
    force: bool = False
    # a sandbox's documented test credentials, written inline (set against a sandbox only)
    sandbox_key: str | None = None
    sandbox_service_secret: str | None = None


@dataclass(frozen=True)
class Prompts:
    """What the command asks for when a flag is missing (the CLI's prompts). ``ids``:
    the missing (key, label) pairs -> their values (refusing without a terminal);
    ``currency`` / ``shop``: None when not asked or left empty."""

    ids: Callable[[list[tuple[str, str]]], dict[str, str]]
    currency: Callable[[], str | None]
    shop: Callable[[], str | None]
    # the environment variable holding the public key service's secret (None: the API key)
    service_secret_env: Callable[[], str | None]


@dataclass(frozen=True)
class Added:
    """A saved profile: its file, what --force reset, and the notes for the operator."""

    name: str
    file: Path
    notes: list[str]
    reset: list[str]


def default_env_name(name: str) -> str:
    return "WALLETCTL_" + re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") + "_KEY"


def add_new_profile(ask: NewProfile, target: Path, prompts: Prompts,
                    suggest: Callable[..., str]) -> Added:
    """Save the profile ``ask`` describes to ``target``. ``suggest(*words)``: a ``walletctl
    profile WORDS`` command line to suggest in a note."""
    # `profile add NAME --base-url URL` with no id: the URL may be a sandbox, asked once
    # (never a production profile's gateway; a profile given its ids makes no request)
    sandbox = (ask.environment != "production"
               and not any(ask.ids.get(k) for k, _ in REQUIRED[1:])
               and _sandbox_at(ask.ids.get("base_url")))
    defaulted: list[str] = []
    if sandbox:
        ask, defaulted = _with_sandbox_defaults(ask)
    table = _table(ask, prompts, sandbox=sandbox)
    reset = _reset_by_force(target, ask.name, table) if ask.force else []
    try:
        add_profile(target, ask.name, table, make_default=ask.default, replace=ask.force)
    except ConfigError as exc:
        raise _as_flag_error(exc, ask.name) from None
    notes: list[str] = []
    if defaulted:
        notes.append(f"{ask.ids['base_url']} is a walletctl sandbox: its defaults are used for "
                     f"{', '.join(defaulted)} (`walletctl sandbox values` lists them)")
    if reset:
        notes.append(f"--force replaced the whole profile {ask.name!r}: reset "
                     f"{', '.join(reset)} (to change one setting and keep the others: "
                     f"`{suggest('set', ask.name, 'KEY', 'VALUE')}`)")
    notes.extend(_after_add(ask.name, target, suggest))
    return Added(ask.name, target, notes, reset)


def _as_flag_error(exc: ConfigError, name: str) -> Exception:
    """A bad value named by the flag that set it (else the error as it is)."""
    prefix = f"profiles.{name} -> "
    if exc.location and exc.location.startswith(prefix):
        flag = FLAG_FOR_KEY.get(exc.location.removeprefix(prefix))
        if flag:
            return UsageError(f"{flag}: {exc.message.removeprefix(f'{exc.location}: ')}")
    return exc


def _sandbox_at(base_url: str | None) -> bool:
    """Whether ``base_url`` is a walletctl sandbox (its health route answers; plain http
    only, the way a sandbox is served: a real gateway is never asked)."""
    if not base_url or not base_url.startswith("http://"):
        return False
    from walletctl.client.admin import SandboxAdmin
    from walletctl.errors import WalletctlError

    try:
        with SandboxAdmin(base_url, timeout=2.0) as admin:
            return admin.answers_health()
    except WalletctlError:
        return False


def _with_sandbox_defaults(ask: NewProfile) -> tuple[NewProfile, list[str]]:
    """``ask`` made the sandbox's own profile (as ``sandbox serve --write-profile`` writes
    it) where no flag said otherwise: its ids, currency, redirect URLs, its test key (when
    no key source is given or set) and its public key service's secret (when that is not
    the key); and the names of the settings so defaulted."""
    from walletctl.models.sandbox_values import DEFAULT_API_KEY
    from walletctl.ops.sandbox_admin import (
        MERCHANT_ID,
        REDIRECTS,
        STORE_ID,
        USER_ID,
        default_service_secret,
    )

    changes: dict[str, Any] = {"ids": {**ask.ids, "merchant_id": MERCHANT_ID,
                                       "store_id": STORE_ID, "user_id": USER_ID}}
    named = ["merchant_id", "store_id", "user_id"]
    if ask.currency is None:
        changes["currency"] = "EUR"
        named.append("currency")
    if not ask.redirect_base and not any(ask.redirects.values()):
        changes["redirects"] = dict(REDIRECTS)
        named.append("redirects")
    key_env = ask.key_env or default_env_name(ask.name)
    if not (ask.key_env or ask.key_file or ask.keyring or os.environ.get(key_env)) \
            and ask.auth_scheme == "PublicApiKey":
        changes["sandbox_key"] = DEFAULT_API_KEY
        named.append("the API key")
    key = (None if ask.key_file or ask.keyring else os.environ.get(key_env)) or DEFAULT_API_KEY
    if not (ask.service_secret_env or ask.service_secret_file) and (
            default_service_secret(key) != key):
        changes["sandbox_service_secret"] = default_service_secret(key)
        named.append("the public key service's secret")
    return replace(ask, **changes), named


def _table(ask: NewProfile, prompts: Prompts, *, sandbox: bool = False) -> dict[str, Any]:
    sources = [flag for flag, on in (("--key-env", ask.key_env), ("--key-file", ask.key_file),
                                     ("--keyring", ask.keyring)) if on]
    if len(sources) > 1:
        raise UsageError(f"{' and '.join(sources)} are exclusive: pick one secret source")
    table: dict[str, Any] = {k: v for k, v in ask.ids.items() if v}
    missing = [(key, label) for key, label in REQUIRED if not ask.ids.get(key)]
    if missing:
        table.update(prompts.ids(missing))
        if ("user_id", REQUIRED[3][1]) in missing and not (
                sandbox or ask.service_secret_env or ask.service_secret_file
                or ask.auth_scheme.lower() == "none"):
            # the service user was asked for: its secret's source next to it
            ask = replace(ask, service_secret_env=prompts.service_secret_env())
    table["amount_format"] = ask.amount_format
    table.update(_optional(ask, ask.currency if ask.currency is not None else prompts.currency()))
    table["auth"] = _auth(ask)
    table["paths"] = _paths(ask.paths)
    table["redirects"] = _redirects(ask.redirect_base, ask.redirects)
    if not table["redirects"]:
        table["redirects"] = _redirects(prompts.shop(), {})
    return table


def _optional(ask: NewProfile, currency: str | None) -> dict[str, Any]:
    """The optional settings given (a whole number of seconds written as one)."""
    timeout = ask.timeout
    values = {
        "currency": None if currency is None else currency.upper(),
        "timeout": None if timeout is None else (
            int(timeout) if float(timeout).is_integer() else timeout),
        "timezone": ask.timezone, "environment": ask.environment,
    }
    return {k: v for k, v in values.items() if v is not None}


def _auth(ask: NewProfile) -> dict[str, Any]:
    """The credentials' table: the key's source (never the key)."""
    auth: dict[str, Any] = {"scheme": ask.auth_scheme}
    given = {"header": ask.header, "username": ask.username}
    auth.update({k: v for k, v in given.items() if v is not None})
    if ask.sandbox_key is not None:  # a sandbox's documented test key (not a secret)
        auth["key"] = ask.sandbox_key
    elif ask.key_file is not None:
        auth["key_file"] = str(ask.key_file.expanduser().absolute())
    elif ask.keyring:
        auth["keyring"] = True
    elif ask.key_env is not None:
        auth["key_env"] = ask.key_env
    elif ask.auth_scheme.lower() != "none":
        auth["key_env"] = default_env_name(ask.name)
    if ask.service_secret_env is not None:
        auth["service_secret_env"] = ask.service_secret_env
    if ask.service_secret_file is not None:
        auth["service_secret_file"] = str(ask.service_secret_file.expanduser().absolute())
    if ask.sandbox_service_secret is not None:
        auth["service_secret"] = ask.sandbox_service_secret
    return auth


def _redirects(base: str | None, given: dict[str, str | None]) -> dict[str, str]:
    table: dict[str, str] = {}
    if base:
        root = base.rstrip("/")
        table.update({key: root + suffix for key, suffix in NEEDED_REDIRECTS.items()})
    table.update({key: value for key, value in given.items() if value})
    return table


def _paths(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--path {item!r}: must be KEY=/path, e.g. checkout=/api/v5/checkout")
        out[key.strip()] = value.strip()
    return out


def _flat(table: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _reset_by_force(target: Path, name: str, table: dict[str, Any]) -> list[str]:
    """The settings of the profile being replaced that --force drops or changes (by key;
    values are not shown: an inline key would be a secret)."""
    if not target.exists():
        return []
    old = load_file(target).document.get("profiles", {}).get(name)
    if not isinstance(old, dict):
        return []
    before, after = _flat(old), _flat(table)
    return [key for key, value in before.items() if after.get(key, None) != value]


def _after_add(name: str, target: Path, suggest: Callable[..., str]) -> list[str]:
    """What the new profile can do, and the one step left (if any)."""
    saved = load_file(target).profiles[name]
    notes = [f"saved {'PRODUCTION ' if saved.is_production else ''}profile {name!r} to "
             f"{target} (mode 0600)"]
    if saved.is_production:
        notes.append(f"batches and smoke against {name!r} ask for its name to be typed "
                     f"(without a terminal: --confirm-profile {name}); sandbox commands "
                     "refuse it")
    notes.extend(_key_notes(name, saved.auth))

    def cmd(*words: str) -> str:
        return f"`{suggest(*words)}`"

    missing = [k for k in NEEDED_REDIRECTS if k not in saved.redirects]
    if missing:
        notes.append("checkout needs redirect URLs (or pass them to checkout): "
                     + cmd("set", name, f"redirects.{missing[0]}", "https://your-shop/...")
                     + (f", and the same for {', '.join(missing[1:])}" if missing[1:] else ""))
    if saved.currency is None:
        notes.append("no default currency: checkout and authorize need --currency on each "
                     "call; " + cmd("set", name, "currency", "EUR"))
    if not saved.auth.has_service_secret:
        notes.append("`walletctl keys` (and smoke's browser-wallet scenario) send the API key "
                     "as the public key service's secret; if the service has its own: "
                     + cmd("set", name, "auth.service_secret_env", "VAR"))
    notes.append(f"{cmd('check', name)} lists what each command needs")
    return notes


def _key_notes(name: str, auth: AuthSettings) -> list[str]:
    """Where the API key is read from, and what to do before the first call."""
    if auth.key_env:
        from walletctl.config.secrets import read_secret_command

        return [f"the API key is read from ${auth.key_env}: "
                f"`{read_secret_command(auth.key_env)}`"]
    if auth.keyring:
        return [f"store the API key with `keyring set walletctl {name}`"]
    if auth.key_file is None:
        return []
    if not auth.key_file.exists():
        return [f"create {auth.key_file} with the API key, readable by you only (chmod 600)"]
    mode = file_mode(auth.key_file)
    if mode is not None and mode & 0o077:
        return [f"{auth.key_file} is {mode:04o}: it is refused until "
                f"`chmod 600 {auth.key_file}`"]
    return []
