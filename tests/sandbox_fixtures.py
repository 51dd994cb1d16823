"""Shared sandbox fixtures (a pytest plugin; the root conftest loads it via ``pytest_plugins``).

Fixtures (all function-scoped, each sandbox has its own in-memory ledger):

``sandbox_clock`` -> :class:`FakeClock`
    A settable clock (aware UTC). ``sandbox_clock.advance(seconds)`` moves time on; the
    ``sandbox_config`` below uses it, so link expiry is testable without sleeping.
``sandbox_config`` -> ``SandboxConfig``
    In-memory DB, ``amount_format="minor"``, static key ``sandbox-api-key``, no faults,
    ``sandbox_clock`` as its clock, clock control enabled.
``sandbox_app`` -> ``FastAPI``
    ``create_app(sandbox_config)``. Its ledger: ``walletctl.sandbox.app.store_of(app)``.
``sandbox_client`` -> ``starlette.testclient.TestClient``
    In-process client for ``sandbox_app`` with ``Authorization: PublicApiKey
    sandbox-api-key`` preset (pass ``headers={"Authorization": ...}`` to override).
``live_sandbox`` -> ``EmbeddedSandbox``
    The sandbox on a real loopback port (``.url``, ``.app``, ``.store``, ``.config``);
    stopped after the test.
``sandbox_profile_file`` -> ``pathlib.Path``
    A 0600 profiles TOML whose ``default_profile`` is ``sandbox``, pointing at
    ``live_sandbox`` (merchant ``M-1001``, store ``S-01``, user ``ops-bot``, EUR, minor
    amounts, redirect URLs set); the key comes from ``$WALLETCTL_TEST_KEY`` (set here with
    monkeypatch). Use with ``walletctl --config PATH -p sandbox ...``.
``checkout_body`` -> callable
    ``checkout_body(ref, amount="1234", type="ecom.sale", **overrides)``: a valid spec 2.1
    body (wire format, minor units) for merchant ``M-1001`` / store ``S-01``.
``followup_body`` -> callable
    ``followup_body(ref, invoice, op, amount)``: a valid spec 2.3 body (``op`` = capture |
    refund | reverse; ``amount`` in minor units).

Constants: ``SANDBOX_API_KEY``, ``AUTH_HEADERS``, ``MERCHANT_ID``, ``STORE_ID``, ``USER_ID``.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

SANDBOX_API_KEY = "sandbox-api-key"
AUTH_HEADERS = {"Authorization": f"PublicApiKey {SANDBOX_API_KEY}"}
MERCHANT_ID = "M-1001"
STORE_ID = "S-01"
USER_ID = "ops-bot"
TEST_KEY_ENV = "WALLETCTL_TEST_KEY"

_LISTENING = re.compile(r"^walletctl sandbox listening on (http://127\.0\.0\.1:\d+)$")


class ServedSandbox:
    """``walletctl sandbox serve --port 0 ARGS`` as a subprocess, its URL read from stdout.

    Threads read stdout (line by line, into :meth:`line`) and stderr: a ``select()`` on the
    buffered pipe would wait for ever for a line the first ``readline`` had already read."""

    def __init__(self, *args: str, start_timeout: float = 60.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self._out: queue.Queue[str | None] = queue.Queue()
        self._err: list[str] = []
        self.lines: list[str] = []
        self._readers = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for reader in self._readers:
            reader.start()
        first = self.line(start_timeout)
        match = _LISTENING.match(first)
        assert match, f"unexpected first line {first!r}: {self.stderr()}"
        self.url = match.group(1)
        ready = self.line(start_timeout)
        assert ready.startswith("walletctl sandbox ready"), f"{ready!r}: {self.stderr()}"

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._out.put(line.rstrip("\n"))
        self._out.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self._err.extend(self.proc.stderr)

    def line(self, timeout: float = 20.0) -> str:
        """The next line of stdout (AssertionError when none comes within ``timeout`` s)."""
        try:
            line = self._out.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"no output from sandbox serve: {self.stderr()}") from None
        if line is None:
            raise AssertionError(f"sandbox serve ended: {self.stderr()}")
        self.lines.append(line)
        return line

    def stderr(self) -> str:
        """What it wrote to stderr so far (the end of it)."""
        return "".join(self._err)[-4000:]

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        """Signal it and wait: (exit code, the rest of stdout, all of stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
        for reader in self._readers:
            reader.join(timeout=20)
        rest = []
        while not self._out.empty() and (line := self._out.get_nowait()) is not None:
            rest.append(line)
        return self.proc.returncode, "\n".join(rest), "".join(self._err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_OPS = {"capture": "ecom.capture", "refund": "ecom.refund",
        "reverse": "ecom.reversalPreauthorization"}


class FakeClock:
    """A manual clock for the sandbox: ``clock()`` returns the current fake time."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def make_checkout_body(ref: str, amount: str = "1234", type: str = "ecom.sale",
                       **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "merchantId": MERCHANT_ID,
        "storeId": STORE_ID,
        "userId": USER_ID,
        "type": type,
        "amount": amount,
        "currencyCode": "EUR",
        "clientSystemTransactionId": ref,
        "checkoutDetails": {
            "paymentMethod": "WalletV2",
            "cardholderFirstName": "Ada",
            "cardholderLastName": "Lovelace",
            "cardholderEmail": "ada@example.com",
        },
        "addressDetails": {
            "billingAddress": {"houseNumber": "1", "street": "Main St", "city": "Berlin",
                               "zipPostalCode": "10115", "countryCode": "DEU"},
            "shippingAddress": {"firstName": "Ada", "lastName": "Lovelace", "street": "Main St",
                                "city": "Berlin", "countryCode": "DEU"},
        },
        "redirectDetails": {
            "returnUrl": "https://shop.example/return",
            "successUrl": "https://shop.example/ok",
            "pendingUrl": "https://shop.example/pending",
            "errorUrl": "https://shop.example/error",
            "cancelUrl": "https://shop.example/cancel",
            "refusedUrl": "https://shop.example/refused",
        },
    }
    body.update(overrides)
    return body


def make_followup_body(ref: str, invoice: str, op: str, amount: str,
                       **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "merchantId": MERCHANT_ID,
        "storeId": STORE_ID,
        "userId": USER_ID,
        "type": _OPS[op],
        "amount": amount,
        "currencyCode": "EUR",
        "clientSystemTransactionId": ref,
        "clientSystemInvoiceId": invoice,
        "apmDetails": {"apmProvider": "WalletV2"},
    }
    body.update(overrides)
    return body


def profile_toml(base_url: str, *, name: str = "sandbox", key_env: str = TEST_KEY_ENV,
                 amount_format: str = "minor") -> str:
    from walletctl.sandbox.scenario import profile_toml as sandbox_profile

    return sandbox_profile(base_url, name=name, key_env=key_env, amount_format=amount_format,
                           merchant_id=MERCHANT_ID, store_id=STORE_ID, user_id=USER_ID,
                           timeout=10)


def write_private(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def sandbox_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sandbox_config(sandbox_clock: FakeClock) -> SandboxConfig:
    from walletctl.sandbox.config import SandboxConfig

    return SandboxConfig(clock=sandbox_clock, allow_clock_control=True, quiet=True)


@pytest.fixture
def sandbox_app(sandbox_config: SandboxConfig) -> Iterator[FastAPI]:
    from walletctl.sandbox.app import create_app, store_of

    app = create_app(sandbox_config)
    yield app
    store_of(app).close()


def client_class() -> type[TestClient]:
    """``starlette.testclient.TestClient``, imported without its httpx2 deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    return TestClient


@pytest.fixture
def sandbox_client(sandbox_app: FastAPI) -> Iterator[TestClient]:
    with client_class()(sandbox_app, headers=AUTH_HEADERS) as client:
        yield client


@pytest.fixture
def live_sandbox() -> Iterator[EmbeddedSandbox]:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
        yield sandbox


@pytest.fixture
def sandbox_profile_file(live_sandbox: EmbeddedSandbox, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(TEST_KEY_ENV, SANDBOX_API_KEY)
    return write_private(tmp_path / "profiles.toml", profile_toml(live_sandbox.url))


@pytest.fixture
def checkout_body() -> Callable[..., dict[str, Any]]:
    return make_checkout_body


@pytest.fixture
def followup_body() -> Callable[..., dict[str, Any]]:
    return make_followup_body
