"""Fixtures of the smoke tests: one live sandbox per module and profiles pointing at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

# Secrets of the test sandbox: every report and output is grepped for them.
API_KEY = "smoke-test-api-key-7Hq2"
SERVICE_SECRET = "smoke-test-service-secret-9Xp4"
KEY_ENV = "WALLETCTL_SMOKE_TEST_KEY"
SERVICE_ENV = "WALLETCTL_SMOKE_TEST_SERVICE"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    config = SandboxConfig(api_key=API_KEY, service_secret=SERVICE_SECRET, quiet=True)
    with EmbeddedSandbox(config) as sb:
        yield sb


ProfileFactory = Callable[..., Path]


@pytest.fixture
def write_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProfileFactory:
    """Write a profiles file with one profile ``ci`` whose key comes from ``KEY_ENV``."""

    def make(base_url: str, *, key: str | None = API_KEY, currency: str = "EUR") -> Path:
        if key is not None:
            monkeypatch.setenv(KEY_ENV, key)
        monkeypatch.setenv(SERVICE_ENV, SERVICE_SECRET)
        path = tmp_path / "profiles.toml"
        path.write_text(
            'default_profile = "ci"\n\n'
            "[profiles.ci]\n"
            f'base_url = "{base_url}"\n'
            'merchant_id = "M-SMOKE"\n'
            'store_id = "S-01"\n'
            'user_id = "ci-bot"\n'
            f'currency = "{currency}"\n'
            "timeout = 10\n\n"
            "[profiles.ci.auth]\n"
            'scheme = "PublicApiKey"\n'
            f'key_env = "{KEY_ENV}"\n'
            f'service_secret_env = "{SERVICE_ENV}"\n',
            encoding="utf-8",
        )
        path.chmod(0o600)
        return path

    return make
