"""walletctl's own sandbox started inside this process, and what points at it: the pytest
plugin's embedded sandbox (:mod:`walletctl.testing`) and ``smoke --embedded``.

The plugin reaches the sandbox's server code only through here (it goes through ops).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from walletctl.errors import ConfigError


@contextmanager
def embedded(*, api_key: str, service_secret: str = "", amount_format: str = "minor",
             clock_control: bool = False) -> Iterator[str]:
    """A quiet sandbox on a free loopback port for the duration; yields its URL.

    ``service_secret`` "" is what ``walletctl sandbox serve`` does without one: the API key
    when one was given, else the default secret (:func:`default_service_secret`).
    """
    try:
        from walletctl.sandbox.config import SandboxConfig
        from walletctl.sandbox.server import EmbeddedSandbox
    except ImportError as exc:  # pragma: no cover - the sandbox ships with walletctl
        raise ConfigError(f"the embedded sandbox is not available ({exc})") from None
    config = SandboxConfig(amount_format="decimal" if amount_format == "decimal" else "minor",
                           api_key=api_key, service_secret=service_secret,
                           allow_clock_control=clock_control, quiet=True)
    with EmbeddedSandbox(config) as sandbox:
        yield sandbox.url


def default_service_secret(api_key: str) -> str:
    """What ``walletctl sandbox serve`` uses when no --service-secret is given."""
    from walletctl.sandbox.config import DEFAULT_API_KEY, DEFAULT_SERVICE_SECRET

    return api_key if api_key != DEFAULT_API_KEY else DEFAULT_SERVICE_SECRET


def profile_toml(base_url: str, *, name: str, key_env: str, amount_format: str,
                 merchant_id: str, store_id: str, user_id: str,
                 service_secret_env: str | None = None) -> str:
    """A profiles file for the sandbox at ``base_url`` (keys by environment variable)."""
    from walletctl.sandbox.scenario import profile_toml as sandbox_profile

    return sandbox_profile(base_url, name=name, key_env=key_env, amount_format=amount_format,
                           merchant_id=merchant_id, store_id=store_id, user_id=user_id,
                           service_secret_env=service_secret_env)
