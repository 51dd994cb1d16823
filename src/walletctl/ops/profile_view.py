"""The profiles as ``profile list`` and ``profile show`` display them (a secret's source is
described, the secret never read out), and the one whose history a command uses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.config.profiles_file import load_file
from walletctl.constants import PATH_KEYS

if TYPE_CHECKING:
    from walletctl.config.profile import Profile, ProfilesFile


def _default(pf: ProfilesFile) -> str | None:
    if pf.default_profile:
        return pf.default_profile
    return next(iter(pf.profiles)) if len(pf.profiles) == 1 else None


def profile_or_none(name: str | None, path: Path,
                    load: Callable[[], Profile]) -> Profile | None:
    """``load()``: the profile ``name`` (or the file's default) selects; None when there is
    none to select (no profiles file yet, or several and none chosen): the history then has
    its default place. A profiles file that breaks a rule is an error, never a silent fall
    back to another history."""
    if name is None and not path.exists():
        return None
    if name is None:
        found = load_file(path)
        if found.default_profile is None and len(found.profiles) != 1:
            return None
    return load()


def profile_rows(path: Path) -> list[dict[str, Any]] | None:
    """A row per profile of the file at ``path`` (None: there is no file yet)."""
    if not path.exists():
        return None
    pf = load_file(path)
    default = _default(pf)
    return [{"name": p.name, "default": p.name == default, "base_url": p.base_url,
             "merchant_id": p.merchant_id, "store_id": p.store_id, "auth": p.auth.scheme,
             "environment": p.environment} for p in pf.profiles.values()]


def selected_settings(config: Path | None, name: str | None) -> tuple[str, dict[str, Any]]:
    """``profile show``: the settings of the profile a command would use with ``--config``
    ``config`` and ``-p`` ``name`` (the environment's when it is the one: its key shown as
    ``env WALLETCTL_API_KEY (set)``, never its value)."""
    from walletctl.config import env_profile
    from walletctl.config.profiles_file import config_path, uses_environment

    if uses_environment(name, config):
        profile = env_profile.from_environment()
        return profile.name, _settings(profile, "(environment)", default=name is None)
    return profile_settings(config_path(config), name)


def profile_settings(path: Path, name: str | None) -> tuple[str, dict[str, Any]]:
    """(the profile's name, every setting of the profile ``name`` selects)."""
    from walletctl.config.profiles_file import select_profile

    pf = load_file(path)
    profile = select_profile(pf, name)
    return profile.name, _settings(profile, str(profile.source) if profile.source else None,
                                   default=profile.name == _default(pf))


def _settings(profile: Profile, source: str | None, *, default: bool) -> dict[str, Any]:
    from walletctl.config.profile import REDIRECT_KEYS
    from walletctl.config.secrets import describe_secret_source, describe_service_secret_source

    auth = profile.auth
    return {
        "name": profile.name,
        "file": source,
        "default": default,
        "base_url": profile.base_url,
        "merchant_id": profile.merchant_id,
        "store_id": profile.store_id,
        "user_id": profile.user_id,
        "amount_format": profile.amount_format,
        "currency": profile.currency,
        "timeout": profile.timeout,
        "timezone": profile.timezone,
        "environment": profile.environment,
        "auth": {
            "scheme": auth.scheme,
            "header": auth.header,
            "username": auth.username,
            "secret": describe_secret_source(profile),
            "service_secret": describe_service_secret_source(profile),
        },
        "paths": {key: profile.path(key) for key in PATH_KEYS},
        "paths_overridden": sorted(profile.paths),
        "redirects": {key: profile.redirects.get(key) for key in REDIRECT_KEYS},
        "history": _history_settings(profile),
    }


def _history_settings(profile: Profile) -> dict[str, Any]:
    """The history's place and the desk's rules (``profile set NAME history.KEY``)."""
    history = profile.history
    return {
        "enabled": history.enabled,
        "path": str(history.path) if history.path else None,
        "url": history.url,  # never holds a password (refused when loaded)
        "require_reason": ", ".join(history.require_reason) or None,
        "limits": dict(history.limits),
        "approvals": dict(history.approvals),
        "approval_hours": history.approval_hours,
        "duplicate_window": history.duplicate_window,
    }
