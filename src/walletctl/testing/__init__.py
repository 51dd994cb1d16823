"""walletctl's pytest plugin (the ``pytest11`` entry point): opt-in fixtures of a real sandbox,
described in docs/testing.md. Only pytest and the standard library are imported up front."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from walletctl.testing.browser import WalletPayBrowser
    from walletctl.testing.sandbox import WalletSandbox

__all__ = ["WalletProfile"]

_OPTIONS: dict[str, tuple[str, str | None]] = {
    # name -> (help, default)
    "url": ("Base URL of a running sandbox to use instead of starting one "
            "(also $WALLETCTL_SANDBOX_URL).", None),
    "api-key": ("The sandbox's PublicApiKey (also $WALLETCTL_SANDBOX_API_KEY).",
                "sandbox-api-key"),
    "token": ("Admin token of the sandbox's /_sandbox routes, when it has one "
              "(also $WALLETCTL_SANDBOX_TOKEN).", None),
    "service-secret": ("Public key service secret of the sandbox (default: the API key when "
                       "one was given, else sandbox-secret, as `sandbox serve` does).", None),
    "merchant-id": ("Merchant id the fixtures use.", "M-1001"),
    "store-id": ("Store id the fixtures use.", "S-01"),
    "user-id": ("User id the fixtures use.", "ops-bot"),
    "amount-format": ("minor or decimal amounts (embedded sandbox only).", "minor"),
    "wait": ("Seconds to wait for an external sandbox to be ready.", "30"),
    "chromium": ("Chromium binary of wallet_checkout (also $WALLETCTL_CHROMIUM; default: "
                 "chromium on PATH, else Playwright's own browser).", None),
}
_ENV_FALLBACK = {"url": "WALLETCTL_SANDBOX_URL", "api-key": "WALLETCTL_SANDBOX_API_KEY",
                 "token": "WALLETCTL_SANDBOX_TOKEN", "chromium": "WALLETCTL_CHROMIUM"}
KEY_ENV = "WALLETCTL_PYTEST_SANDBOX_KEY"
SECRET_ENV = "WALLETCTL_PYTEST_SANDBOX_SECRET"  # noqa: S105 - a variable name
PROFILE_NAME = "wallet-sandbox"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("walletctl", "walletctl sandbox fixtures")
    for name, (text, default) in _OPTIONS.items():
        group.addoption(f"--wallet-sandbox-{name}", dest=f"wallet_sandbox_{name}".replace(
            "-", "_"), default=None, help=text)
        parser.addini(f"wallet_sandbox_{name}".replace("-", "_"), text, default=default)


def _setting(config: pytest.Config, name: str) -> str | None:
    key = f"wallet_sandbox_{name}".replace("-", "_")
    value = config.getoption(key, default=None)
    if value:
        return str(value)
    env = _ENV_FALLBACK.get(name)
    if env and os.environ.get(env):
        return os.environ[env]
    ini = config.getini(key)
    return str(ini) if ini else None


@pytest.fixture(scope="session")
def wallet_sandbox_session(pytestconfig: pytest.Config) -> Iterator[WalletSandbox]:
    """The session's sandbox (embedded, or external with --wallet-sandbox-url); not reset."""
    from walletctl.errors import WalletctlError
    from walletctl.ops.sandbox_admin import default_service_secret, embedded, wait_ready
    from walletctl.testing.sandbox import WalletSandbox

    def get(name: str) -> str:
        return _setting(pytestconfig, name) or str(_OPTIONS[name][1])

    ids: dict[str, Any] = {
        "api_key": get("api-key"), "merchant_id": get("merchant-id"),
        "store_id": get("store-id"), "user_id": get("user-id"),
        "service_secret": _setting(pytestconfig, "service-secret") or default_service_secret(
            get("api-key")),
        "admin_token": _setting(pytestconfig, "token"),
    }
    url = _setting(pytestconfig, "url")
    with ExitStack() as stack:
        if url:
            base = url.rstrip("/")
            try:
                ready = wait_ready(base, timeout=_seconds(get("wait")))
            except WalletctlError as exc:  # not ready in time, or not a URL at all
                _stop(f"--wallet-sandbox-url {base}: {exc}")
            handle = WalletSandbox(base_url=base, external=True,
                                   amount_format=ready["amountFormat"] or "minor", **ids)
        else:
            fmt = get("amount-format")
            if fmt not in ("minor", "decimal"):
                _stop(f"wallet_sandbox_amount_format: must be minor or decimal, not {fmt!r}")
            handle = WalletSandbox(base_url=stack.enter_context(embedded(
                api_key=ids["api_key"], amount_format=fmt, clock_control=True)),
                amount_format=fmt, **ids)
        handle._baseline_faults = handle.current_faults()
        yield handle


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        _stop(f"wallet_sandbox_wait: must be 0-3600 seconds, not {text!r}")
    return value


def _stop(message: str) -> NoReturn:
    """End the whole run once with a usage error (exit 4), not an error in every test."""
    pytest.exit(f"walletctl sandbox: {message}", returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture
def wallet_sandbox(wallet_sandbox_session: WalletSandbox) -> Iterator[WalletSandbox]:
    """The session's sandbox, reset (ledger, keys, faults, clock) before and after the test."""
    wallet_sandbox_session.reset()
    yield wallet_sandbox_session
    wallet_sandbox_session.reset()


@pytest.fixture(scope="session")
def wallet_checkout_session(wallet_sandbox_session: WalletSandbox,
                            pytestconfig: pytest.Config) -> Iterator[WalletPayBrowser]:
    """The session's browser for ``wallet_checkout`` (started on first use)."""
    from walletctl.testing.browser import WalletPayBrowser

    browser = WalletPayBrowser(wallet_sandbox_session.base_url,
                               executable=_setting(pytestconfig, "chromium"),
                               admin_token=wallet_sandbox_session.admin_token)
    try:
        browser.start()
    except RuntimeError as exc:  # Playwright is not installed
        pytest.fail(f"wallet_checkout: {exc}", pytrace=False)
    yield browser
    browser.close()


@pytest.fixture
def wallet_checkout(wallet_sandbox: WalletSandbox,
                    wallet_checkout_session: WalletPayBrowser) -> Iterator[WalletPayBrowser]:
    """Open merchant pages with the sandbox's test driver: ``wallet_checkout.open(url)``."""
    yield wallet_checkout_session
    wallet_checkout_session.close_pages()


@dataclass
class WalletProfile:
    """A profiles file pointing walletctl at the test's sandbox, and a way to run the CLI."""

    path: Path
    name: str
    env: dict[str, str] = field(repr=False)

    def run(self, *args: str, input: str | None = None,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``walletctl ARGS`` in a subprocess with this profile (never raises on exit
        status: check ``.returncode``, ``.stdout``, ``.stderr``)."""
        return subprocess.run(
            [sys.executable, "-m", "walletctl", *args], input=input, env=self.env,
            capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def wallet_profile(wallet_sandbox: WalletSandbox, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> WalletProfile:
    """A profile named ``wallet-sandbox`` for ``wallet_sandbox``, selected through the
    environment (so in-process CliRunner calls and subprocesses both use it)."""
    from walletctl.constants import Env
    from walletctl.ops.sandbox_admin import profile_toml

    path = tmp_path / "walletctl-profiles.toml"
    text = profile_toml(wallet_sandbox.base_url, name=PROFILE_NAME, key_env=KEY_ENV,
                        amount_format=wallet_sandbox.amount_format,
                        merchant_id=wallet_sandbox.merchant_id,
                        store_id=wallet_sandbox.store_id, user_id=wallet_sandbox.user_id,
                        service_secret_env=SECRET_ENV)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    values = {Env.CONFIG: str(path), Env.PROFILE: PROFILE_NAME,
              KEY_ENV: wallet_sandbox.api_key, SECRET_ENV: wallet_sandbox.service_secret}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return WalletProfile(path=path, name=PROFILE_NAME, env={**os.environ, **values})
