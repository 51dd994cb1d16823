"""``walletctl profile check``: what a profile can run, and why not. Offline: the file, its
permissions, each secret, the auth header, each command's needs (with the ``profile set`` line
that adds what is missing). ``online`` adds a lookup of a reference that cannot exist and the
public key service's keys, to prove the gateway accepts the credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.config.profile import NEEDED_REDIRECTS
from walletctl.errors import AuthError, ConfigError, GatewayError, WalletctlError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile


@dataclass(frozen=True)
class Check:
    profile: str | None  # None for checks of the file itself
    check: str
    ok: bool
    detail: str
    hint: str | None = None
    warning: bool = False  # ok, but a command needs something more (reported, not failed)

    @classmethod
    def failed(cls, profile: str | None, check: str, exc: WalletctlError) -> Check:
        return cls(profile, check, False, exc.message, exc.hint)


def _check_profile(profile: Profile, suggest: Callable[..., str]) -> list[Check]:
    from walletctl.config.secrets import (
        auth_header,
        resolve_secret_with_source,
        service_basic_auth,
    )

    name = profile.name
    results: list[Check] = [Check(name, "profile", True, "settings valid"),
                             _environment(profile)]
    auth = profile.auth
    if auth.scheme == "none" and not auth.has_source:
        results.append(Check(name, "secret", True, "none needed (scheme none)"))
    else:
        stage = "secret"
        try:
            _, source = resolve_secret_with_source(profile)
            results.append(Check(name, stage, True, f"found in {source}"))
            stage = "auth header"
            header = auth_header(profile)
            shown = "none" if header is None else f"{header[0]}: {auth.scheme} ****"
            results.append(Check(name, stage, True, shown))
        except ConfigError as exc:
            results.append(Check.failed(name, stage, exc))
    if profile.auth.has_service_secret:
        try:
            service_basic_auth(profile)
            results.append(Check(name, "service secret", True, "found"))
        except ConfigError as exc:
            results.append(Check.failed(name, "service secret", exc))
    key_ok = all(r.ok for r in results)
    results.extend(_commands(profile, key_ok, suggest))
    return results


def _environment(profile: Profile) -> Check:
    """The profile's environment, the detail exactly ``test`` or ``production``."""
    if not profile.is_production:
        return Check(profile.name, "environment", True, profile.environment)
    return Check(profile.name, "environment", True, profile.environment,
                  f"PRODUCTION: confirmations say so; batches and smoke need the name typed "
                  f"(--confirm-profile {profile.name} without a terminal); sandbox commands "
                  "and smoke --embedded refuse it")


_SMOKE_REDIRECT = "smoke redirect-sale, preauth-capture-refund, preauth-reversal, refusals"


def _commands(profile: Profile, key_ok: bool, suggest: Callable[..., str]) -> list[Check]:
    """Per command (and per smoke scenario): can it run, and if not, the `profile set` line
    that adds what it misses."""
    from walletctl.config.env_profile import is_env, setting_hint

    name = profile.name

    def set_line(key: str, value: str) -> str:
        if is_env(profile):  # no file to `profile set`: the variable that sets it
            return setting_hint(key, value)
        return f"`{suggest('set', name, key, value)}`"

    if not key_ok:
        return [Check(name, "commands", False, "none can run until the secret above is found")]
    out = [Check(name, "capture, refund, reverse, lookup, account", True,
                  "have what they need")]
    missing = [k for k in NEEDED_REDIRECTS if k not in profile.redirects]
    if missing:
        out.append(Check(
            name, "checkout", True,
            "needs --" + ", --".join(k.replace("_", "-") for k in missing)
            + " on each call: the profile has no [redirects] " + ", ".join(missing),
            "; ".join(set_line(f"redirects.{k}", f"https://your-shop/{k.split('_')[0]}")
                      for k in missing), warning=True))
    else:
        out.append(Check(name, "checkout", True, "redirect URLs from [redirects]"))
    if profile.currency is None:
        out.append(Check(name, "checkout, authorize currency", True,
                          "no default currency: pass --currency on each checkout and authorize",
                          set_line("currency", "EUR"), warning=True))
    # `walletctl keys`: the public key service's secret, or the API key in its place
    secret_hint = set_line("auth.service_secret_env", "VAR")
    has_secret, no_auth = profile.auth.has_service_secret, profile.auth.scheme == "none"
    if has_secret:
        out.append(Check(name, "keys", True, "service secret configured"))
    elif not no_auth:
        out.append(Check(name, "keys", True,
                         "sends the API key as the public key service's secret (no service "
                         "secret set); a service with its own secret answers 401", secret_hint,
                         warning=True))
    approval = ("a walletctl sandbox approves headlessly; another gateway needs "
                "--approve-url-command CMD")
    if profile.is_production:
        approval = "a production gateway needs --approve-url-command CMD (else skipped)"
    out.append(Check(name, _SMOKE_REDIRECT, True,
                      f"have the key; currency {profile.currency or 'EUR (no default set)'}; "
                      f"approval: {approval}"))
    # smoke's browser-wallet scenario: its first step asks the public key service
    if has_secret or no_auth:
        out.append(Check(name, "smoke browser-wallet", True, "service secret configured"))
    elif is_env(profile):  # smoke skips it (the secret is optional in the environment)
        out.append(Check(name, "smoke browser-wallet", True,
                         "not run: the profile from the environment has no service secret",
                         secret_hint, warning=True))
    else:
        out.append(Check(name, "smoke browser-wallet", True,
                         "its first step (public keys) sends the API key as the service secret: "
                         "a gateway (or `sandbox serve --service-secret`) with its own secret "
                         "answers 401", secret_hint, warning=True))
    return out


def _online(profile: Profile, transport: Any) -> tuple[list[Check], WalletctlError | None]:
    """A lookup of a reference that cannot exist (404 = accepted), then (unless the scheme is
    none) the public key service's keys (``walletctl keys``, smoke's browser wallet). A
    failure comes with its error, whose exit code the check then ends with (7 when the
    gateway cannot be reached, 6 when it answers 5xx, 9 when it refuses the credentials)."""
    import secrets

    from walletctl.client.gateway import GatewayClient
    from walletctl.ops.walletpay import fetch_keys

    name, ref, step = profile.name, f"walletctl-check-{secrets.token_hex(4)}", "online"
    done: list[Check] = []
    try:
        with GatewayClient(profile, transport=transport) as client:
            try:
                client.lookup(ref)
                done.append(Check(name, step, True, f"credentials accepted (lookup of {ref})"))
            except GatewayError as exc:
                if exc.status != 404:
                    raise
                done.append(Check(name, step, True, f"credentials accepted (lookup of {ref}: "
                                                    "HTTP 404, as expected)"))
            if profile.auth.scheme != "none":
                step = "online keys"
                fetch_keys(client)
                user = profile.auth.username or profile.user_id
                done.append(Check(name, step, True, f"the public key service accepts user "
                                                    f"{user} and the service secret"))
    except WalletctlError as exc:
        return [*done, Check.failed(name, step, exc)], exc
    return done, None


def _file_checks(results: list[Check], path: Path, name: str | None, *,
                 every: bool) -> list[Profile]:
    """The file's checks (appended to ``results``) and the profiles to check: ``every``
    one in the file, else ``name``'s (None: the selected one); none when the file or the
    name fails."""
    from walletctl.config.profile import display_path
    from walletctl.config.profiles_file import load_file, select_profile

    try:
        pf = load_file(path, check_permissions=False)
    except ConfigError as exc:
        results.append(Check.failed(None, "file", exc))
        return []
    results.append(Check(None, "file", True, f"{display_path(path)} parses"))
    if pf.mode is not None:
        if pf.holds_inline_secret and pf.mode & 0o077:
            detail = f"{pf.mode:04o} is too open for a file holding a secret"
            results.append(Check(None, "permissions", False, detail, f"chmod 600 {path}"))
        else:
            note = "" if pf.holds_inline_secret else " (no inline secret)"
            results.append(Check(None, "permissions", True, f"{pf.mode:04o}{note}"))
    if every:
        if not pf.profiles:
            results.append(Check(None, "profiles", False, f"no profiles in {path}"))
        return list(pf.profiles.values())
    try:
        return [select_profile(pf, name)]
    except ConfigError as exc:
        results.append(Check.failed(None, "profile", exc))
        return []


@dataclass(frozen=True)
class ProfileChecks:
    checks: list[Check]
    online_errors: list[WalletctlError]  # the errors of the online checks that failed

    def raise_failure(self) -> None:
        """The error of the first failed check (the online ones' own exit code when only
        they failed: 9 credentials refused, 7 gateway unreachable, 6 gateway failing)."""
        failed = [r for r in self.checks if not r.ok]
        online_failed = [r for r in failed if r.check in ("online", "online keys")]
        if online_failed and len(failed) == len(online_failed):
            first = online_failed[0]
            if "HTTP 401" in first.detail or "HTTP 403" in first.detail:
                raise AuthError(401, description="credentials refused", hint=first.hint)
            error = WalletctlError(f"profile check failed: {first.detail}", hint=first.hint)
            error.exit_code = self.online_errors[0].exit_code  # 7 unreachable, 6 gateway, ...
            raise error
        if failed:
            raise ConfigError(
                f"profile check failed: {len(failed)} problem(s)",
                hint=failed[0].hint or failed[0].detail,
            )


def _env_checks(results: list[Check]) -> list[Profile]:
    """The environment's profile (no file to check): its variables' check, and the profile."""
    from walletctl.config import env_profile

    try:
        profile = env_profile.from_environment()
    except ConfigError as exc:
        results.append(Check.failed(None, "environment", exc))
        return []
    results.append(Check(None, "environment", True,
                         "profile env from the WALLETCTL_* variables (no file)"))
    return [profile]


def check_profiles(config: Path | None, name: str | None, *, every: bool, online: bool,
                   transport: Any, suggest: Callable[..., str],
                   carry: Callable[[str | None], str | None]) -> ProfileChecks:
    """The checks of the profiles file (``config``: the one named, None: the usual one) and
    of ``every`` profile in it, else of ``name``'s (None: the selected one; the environment's
    when commands would use it). ``suggest(*words)``: a ``walletctl profile ...`` command line
    for a hint; ``carry(hint)``: a hint with the user's global options."""
    from walletctl.config.profiles_file import config_path, uses_environment

    results: list[Check] = []
    online_errors: list[WalletctlError] = []
    profiles = (_env_checks(results) if not every and uses_environment(name, config)
                else _file_checks(results, config_path(config), name, every=every))
    for profile in profiles:
        checks = _check_profile(profile, suggest)
        results.extend(checks)
        if online and all(r.ok for r in checks):
            done, error = _online(profile, transport)
            results.extend(done)
            if error is not None:
                online_errors.append(error)
    return ProfileChecks([replace(r, hint=carry(r.hint)) for r in results], online_errors)
