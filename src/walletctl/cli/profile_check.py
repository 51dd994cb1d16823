"""``walletctl profile check``: what a profile can run, and why not.

Offline by default (the file parses, permissions, each secret is found, the auth header
builds, which commands have what they need); ``--online`` adds two read-only requests (a
lookup of a reference that cannot exist, and the public key service's keys) to prove the
gateway accepts the API key and the service user and secret.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from walletctl.cli.state import State, command_line, get_state

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.errors import WalletctlError



@dataclass(frozen=True)
class _Check:
    profile: str | None  # None for checks of the file itself
    check: str
    ok: bool
    detail: str
    hint: str | None = None
    warning: bool = False  # ok, but a command needs something more (reported, not failed)

    @classmethod
    def failed(cls, profile: str | None, check: str, exc: WalletctlError) -> _Check:
        return cls(profile, check, False, exc.message, exc.hint)


def _check_profile(profile: Profile, state: State | None = None) -> list[_Check]:
    from walletctl.config.secrets import (
        auth_header,
        resolve_secret_with_source,
        service_basic_auth,
    )
    from walletctl.errors import ConfigError

    name = profile.name
    results: list[_Check] = [_Check(name, "profile", True, "settings valid"),
                             _environment(profile)]
    auth = profile.auth
    if auth.scheme == "none" and not auth.has_source:
        results.append(_Check(name, "secret", True, "none needed (scheme none)"))
    else:
        stage = "secret"
        try:
            _, source = resolve_secret_with_source(profile)
            results.append(_Check(name, stage, True, f"found in {source}"))
            stage = "auth header"
            header = auth_header(profile)
            shown = "none" if header is None else f"{header[0]}: {auth.scheme} ****"
            results.append(_Check(name, stage, True, shown))
        except ConfigError as exc:
            results.append(_Check.failed(name, stage, exc))
    if auth.service_secret_env or auth.service_secret_file or auth.service_secret:
        try:
            service_basic_auth(profile)
            results.append(_Check(name, "service secret", True, "found"))
        except ConfigError as exc:
            results.append(_Check.failed(name, "service secret", exc))
    key_ok = all(r.ok for r in results)
    results.extend(_commands(profile, key_ok, state))
    return results


def _environment(profile: Profile) -> _Check:
    """The profile's environment, the detail exactly ``test`` or ``production``."""
    if not profile.is_production:
        return _Check(profile.name, "environment", True, profile.environment)
    return _Check(profile.name, "environment", True, profile.environment,
                  f"PRODUCTION: confirmations say so; batches and smoke need the name typed "
                  f"(--confirm-profile {profile.name} without a terminal); sandbox commands "
                  "and smoke --embedded refuse it")


_NEEDED_REDIRECTS = ("success_url", "error_url", "pending_url", "return_url")
_SMOKE_REDIRECT = "smoke redirect-sale, preauth-capture-refund, preauth-reversal, refusals"


def _keys(profile: Profile, hint: str) -> list[_Check]:
    """``walletctl keys``: the public key service's secret, or the API key in its place."""
    if _service_secret(profile):
        return [_Check(profile.name, "keys", True, "service secret configured")]
    if profile.auth.scheme == "none":
        return []
    return [_Check(profile.name, "keys", True,
                   "sends the API key as the public key service's secret (no service secret "
                   "set); a service with its own secret answers 401", hint, warning=True)]


def _service_secret(profile: Profile) -> bool:
    auth = profile.auth
    return bool(auth.service_secret_env or auth.service_secret_file or auth.service_secret)


def _browser_wallet(profile: Profile, hint: str) -> list[_Check]:
    """smoke's browser-wallet scenario: its first step asks the public key service."""
    name = profile.name
    if _service_secret(profile) or profile.auth.scheme == "none":
        return [_Check(name, "smoke browser-wallet", True, "service secret configured")]
    return [_Check(
        name, "smoke browser-wallet", True,
        "its first step (public keys) sends the API key as the service secret: a gateway "
        "(or `sandbox serve --service-secret`) with its own secret answers 401",
        hint, warning=True)]


def _commands(profile: Profile, key_ok: bool, state: State | None = None) -> list[_Check]:
    """Per command (and per smoke scenario): can it run, and if not, the `profile set` line
    that adds what it misses."""
    name = profile.name

    def set_line(key: str, value: str) -> str:
        return f"`{command_line(state, 'profile', 'set', name, key, value)}`"

    if not key_ok:
        return [_Check(name, "commands", False, "none can run until the secret above is found")]
    out = [_Check(name, "capture, refund, reverse, lookup, account", True,
                  "have what they need")]
    missing = [k for k in _NEEDED_REDIRECTS if k not in profile.redirects]
    if missing:
        out.append(_Check(
            name, "checkout", True,
            "needs --" + ", --".join(k.replace("_", "-") for k in missing)
            + " on each call: the profile has no [redirects] " + ", ".join(missing),
            "; ".join(set_line(f"redirects.{k}", f"https://your-shop/{k.split('_')[0]}")
                      for k in missing), warning=True))
    else:
        out.append(_Check(name, "checkout", True, "redirect URLs from [redirects]"))
    currency_hint = set_line("currency", "EUR")
    if profile.currency is None:
        out.append(_Check(name, "checkout, authorize currency", True,
                          "no default currency: pass --currency on each checkout and authorize",
                          currency_hint, warning=True))
    out.extend(_keys(profile, set_line("auth.service_secret_env", "VAR")))
    approval = ("a walletctl sandbox approves headlessly; another gateway needs "
                "--approve-url-command CMD")
    if profile.is_production:
        approval = "a production gateway needs --approve-url-command CMD (else skipped)"
    out.append(_Check(name, _SMOKE_REDIRECT, True,
                      f"have the key; currency {profile.currency or 'EUR (no default set)'}; "
                      f"approval: {approval}"))
    out.extend(_browser_wallet(profile, set_line("auth.service_secret_env", "VAR")))
    return out


def _online(profile: Profile) -> tuple[_Check, WalletctlError | None]:
    """One read-only request: a lookup of a reference that cannot exist (404 = accepted).
    A failure comes with its error, whose exit code the check then ends with (7 when the
    gateway cannot be reached, 6 when it answers 5xx, 9 when it refuses the credentials)."""
    import secrets

    from walletctl.cli.state import ENV
    from walletctl.client.gateway import GatewayClient
    from walletctl.errors import GatewayError, WalletctlError

    ref = f"walletctl-check-{secrets.token_hex(4)}"
    try:
        with GatewayClient(profile, transport=ENV.transport) as client:
            client.lookup(ref)
    except GatewayError as exc:
        if exc.status == 404:
            return _Check(profile.name, "online", True,
                          f"credentials accepted (lookup of {ref}: HTTP 404, as expected)"), None
        return _Check.failed(profile.name, "online", exc), exc
    except WalletctlError as exc:
        return _Check.failed(profile.name, "online", exc), exc
    return _Check(profile.name, "online", True, f"credentials accepted (lookup of {ref})"), None


def _online_keys(profile: Profile) -> tuple[_Check, WalletctlError | None]:
    """One request to the public key service (``walletctl keys``, smoke's browser wallet):
    its user and secret accepted, or the error (a 401 names the service secret)."""
    from walletctl.cli.state import ENV
    from walletctl.client.gateway import GatewayClient
    from walletctl.errors import WalletctlError
    from walletctl.ops.walletpay import fetch_keys

    try:
        with GatewayClient(profile, transport=ENV.transport) as client:
            fetch_keys(client)
    except WalletctlError as exc:
        return _Check.failed(profile.name, "online keys", exc), exc
    user = profile.auth.username or profile.user_id
    return _Check(profile.name, "online keys", True,
                  f"the public key service accepts user {user} and the service secret"), None


def check(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Profile to check (default: the selected profile).")
    ] = None,
    all_profiles: Annotated[
        bool, typer.Option("--all", help="Check every profile in the file.")
    ] = False,
    online: Annotated[
        bool, typer.Option("--online", help="Also send two read-only requests: a lookup of "
                           "a reference that cannot exist (the API key) and one to the public "
                           "key service (its user and secret).")
    ] = False,
) -> None:
    """Check a profile: file, permissions, secrets, and which commands it can run.

    Prints one line per check (ok / warn / FAIL); exits with the config exit code when one
    fails (with --online: 9 credentials refused, 7 gateway unreachable, 6 gateway failing).
    Nothing is sent unless --online.
    """
    from walletctl.config.profile import display_path
    from walletctl.config.profiles_file import config_path, load_file, select_profile
    from walletctl.errors import ConfigError

    state = get_state(ctx)
    path = config_path(state.config_path)
    results: list[_Check] = []
    online_errors: list[WalletctlError] = []

    def finish() -> None:
        from dataclasses import replace

        from walletctl.cli.state import carry_options
        from walletctl.render.profiles import render_checks

        results[:] = [replace(r, hint=carry_options(r.hint, state)) for r in results]
        render_checks(state.output_format, [asdict(r) for r in results])
        failed = [r for r in results if not r.ok]
        online_failed = [r for r in failed if r.check in ("online", "online keys")]
        if online_failed and len(failed) == len(online_failed):
            from walletctl.errors import AuthError, WalletctlError

            first = online_failed[0]
            if "HTTP 401" in first.detail or "HTTP 403" in first.detail:
                raise AuthError(401, description="credentials refused", hint=first.hint)
            error = WalletctlError(f"profile check failed: {first.detail}", hint=first.hint)
            error.exit_code = online_errors[0].exit_code  # 7 unreachable, 6 gateway, ...
            raise error
        if failed:
            raise ConfigError(
                f"profile check failed: {len(failed)} problem(s)",
                hint=failed[0].hint or failed[0].detail,
            )

    try:
        pf = load_file(path, check_permissions=False)
    except ConfigError as exc:
        results.append(_Check.failed(None, "file", exc))
        return finish()
    results.append(_Check(None, "file", True, f"{display_path(path)} parses"))
    if pf.mode is not None:
        if pf.holds_inline_secret and pf.mode & 0o077:
            detail = f"{pf.mode:04o} is too open for a file holding a secret"
            results.append(_Check(None, "permissions", False, detail, f"chmod 600 {path}"))
        else:
            note = "" if pf.holds_inline_secret else " (no inline secret)"
            results.append(_Check(None, "permissions", True, f"{pf.mode:04o}{note}"))
    if all_profiles:
        selected = list(pf.profiles.values())
        if not selected:
            results.append(_Check(None, "profiles", False, f"no profiles in {path}"))
    else:
        try:
            selected = [select_profile(pf, name or state.profile_name)]
        except ConfigError as exc:
            results.append(_Check.failed(None, "profile", exc))
            return finish()
    for profile in selected:
        checks = _check_profile(profile, state)
        results.extend(checks)
        if online and all(r.ok for r in checks):
            result, error = _online(profile)
            results.append(result)
            if error is None and profile.auth.scheme != "none":
                result, error = _online_keys(profile)
                results.append(result)
            if error is not None:
                online_errors.append(error)
    return finish()
