"""Profile settings as read from the TOML file (see docs/profiles.md and docs/guide.md "Profiles").

Plain frozen dataclasses: cheap to import, no validation framework needed on the hot path of
``walletctl --help``. Checks live in ``config.validate``, reading and saving the file in
``config.profiles_file``; secrets in ``config.secrets``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from walletctl.constants import DEFAULT_TIMEOUT, DUPLICATE_WINDOW, PATH_KEYS

AuthScheme = Literal["PublicApiKey", "Bearer", "Basic", "header", "none"]
# What a profile's gateway is: "production" moves real money (docs/profiles.md, "Production
# profiles"): its confirmations say so, its batches need its name typed or --confirm-profile,
# the sandbox's admin commands and `smoke --embedded` refuse it.
Environment = Literal["test", "production"]
ENVIRONMENTS: tuple[str, ...] = ("test", "production")
AUTH_SCHEMES: tuple[str, ...] = ("PublicApiKey", "Bearer", "Basic", "header", "none")

# Keys of a profile's [redirects] table: defaults for checkout's redirectDetails.
REDIRECT_KEYS: tuple[str, ...] = (
    "return_url",
    "success_url",
    "pending_url",
    "error_url",
    "cancel_url",
    "refused_url",
)


@dataclass(frozen=True)
class AuthSettings:
    """Where the secret comes from: any of key_env / key_file / keyring / key.

    When several are set they are tried in that order (``config.secrets`` documents it).
    """

    scheme: AuthScheme = "PublicApiKey"
    key_env: str | None = None
    key_file: Path | None = None  # absolute after loading (relative paths: to the profiles file)
    keyring: bool = False
    # An inline secret: accepted only when the profile file is 0600 (checked on loading the file).
    key: str | None = field(default=None, repr=False)
    header: str | None = None  # header name for scheme = "header"
    username: str | None = None  # Basic auth user (defaults to the profile's user_id)
    # Basic secret for the public key service (walletctl keys); same sources, optional.
    service_secret_env: str | None = None
    service_secret_file: Path | None = None
    # An inline service secret (e.g. a sandbox's documented one): 0600 files only, like ``key``.
    service_secret: str | None = field(default=None, repr=False)

    @property
    def has_source(self) -> bool:
        """True when at least one secret source is configured."""
        return bool(self.key_env or self.key_file or self.keyring or self.key)


# Operations the history's rules ([history] require_reason / limits) can name.
HISTORY_OPERATIONS: tuple[str, ...] = ("checkout", "capture", "refund", "reverse", "authorize")
# ... and the ones that can need a second operator's approval ([history.approvals])
APPROVAL_OPERATIONS: tuple[str, ...] = ("capture", "refund", "reverse")
APPROVAL_HOURS = 24


@dataclass(frozen=True)
class HistorySettings:
    """``[profiles.NAME.history]``: the local audit log and the support desk's rules."""

    enabled: bool = True
    path: Path | None = None  # absolute after loading; WALLETCTL_AUDIT_LOG wins
    # a team's shared history: postgresql://ROLE@HOST:PORT/DB (no password; checked)
    url: str | None = None
    require_reason: tuple[str, ...] = ()  # operations that need --reason
    # operation -> amount in major units (text, a Decimal): above it, --reason and a typed
    # confirmation of the amount are required
    limits: dict[str, str] = field(default_factory=dict)
    # minutes: a movement identical to one made this recently is held as a likely duplicate
    duplicate_window: int = DUPLICATE_WINDOW
    # [history.approvals] operation -> amount in major units: above it a second operator
    # approves first (four eyes); an approval expires after approval_hours
    approvals: dict[str, str] = field(default_factory=dict)
    approval_hours: int = APPROVAL_HOURS


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
    history: HistorySettings = field(default_factory=HistorySettings)
    environment: Environment = "test"
    source: Path | None = None  # the file it came from (for error locations)

    @property
    def is_production(self) -> bool:
        return self.environment == "production"

    def path(self, key: str) -> str:
        return self.paths.get(key) or PATH_KEYS[key]

    def url(self, key: str) -> str:
        return self.base_url.rstrip("/") + self.path(key)

    @property
    def location(self) -> str:
        """The prefix of error locations for this profile: ``profiles.<name>``."""
        return f"profiles.{self.name}"


@dataclass(frozen=True)
class ProfilesFile:
    """One parsed and validated profiles file.

    ``document`` is the TOML as read (plain dicts), kept so ``profile add/remove`` can rewrite
    the file without turning resolved values (absolute key_file paths...) into new text.
    """

    path: Path
    default_profile: str | None
    profiles: dict[str, Profile]
    document: dict[str, Any]
    mode: int | None = None  # st_mode & 0o777, None when the platform has no POSIX modes

    @property
    def holds_inline_secret(self) -> bool:
        return any(
            p.auth.key is not None or p.auth.service_secret is not None
            for p in self.profiles.values()
        )

    def names(self) -> list[str]:
        return list(self.profiles)


def display_path(path: Path) -> str:
    """``path`` with the home directory shown as ``~`` (for messages people read)."""
    try:
        home = Path.home()
    except RuntimeError:
        return str(path)
    try:
        rel = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if str(rel) == "." else f"~/{rel.as_posix()}"
