"""Profile settings as read from the TOML file (see README "Profiles").

Plain frozen dataclasses: cheap to import, no validation framework needed on the hot path of
``walletctl --help``. Parsing and checks live in ``config.store``; secrets in ``config.secrets``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from walletctl.constants import DEFAULT_TIMEOUT, PATH_KEYS

AuthScheme = Literal["PublicApiKey", "Bearer", "Basic", "header", "none"]
AUTH_SCHEMES: tuple[str, ...] = ("PublicApiKey", "Bearer", "Basic", "header", "none")


@dataclass(frozen=True)
class AuthSettings:
    """Where the secret comes from. Exactly one of key_env / key_file / keyring / key."""

    scheme: AuthScheme = "PublicApiKey"
    key_env: str | None = None
    key_file: Path | None = None
    keyring: bool = False
    # An inline secret: accepted only when the profile file is 0600 (checked by config.store).
    key: str | None = field(default=None, repr=False)
    header: str | None = None  # header name for scheme = "header"
    username: str | None = None  # Basic auth user (defaults to the profile's user_id)
    # Basic secret for the public key service (walletctl keys); same sources, optional.
    service_secret_env: str | None = None
    service_secret_file: Path | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    base_url: str
    merchant_id: str
    store_id: str
    user_id: str
    amount_format: Literal["minor", "decimal"] = "minor"
    currency: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    timezone: str | None = None
    auth: AuthSettings = field(default_factory=AuthSettings)
    paths: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    source: Path | None = None  # the file it came from (for error locations)

    def path(self, key: str) -> str:
        return self.paths.get(key) or PATH_KEYS[key]

    def url(self, key: str) -> str:
        return self.base_url.rstrip("/") + self.path(key)
