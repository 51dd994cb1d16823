"""Fixtures for the first-hour tests (issue 12): walletctl run as a new user would.

``served_sandbox`` -> :class:`Served`
    ``walletctl sandbox serve --port 0 --write-profile sbx`` as a real subprocess on a real
    port; the profile is written ONLY by that command into a fresh profiles file
    (``.config``). ``.run(*argv)`` runs ``walletctl`` with that file selected (COLUMNS=80,
    no terminal; in-process, or ``process=True``: a subprocess); ``.url`` is the sandbox's URL.
``embedded_serving(directory)``
    The same, with the sandbox in a thread of this process, for tests where the served
    process is not the point.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cli_runner import WALLETCTL as WALLETCTL  # re-exported: the tests of this area use it
from cli_runner import run_walletctl


def walletctl_env(config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update({"WALLETCTL_CONFIG": str(config), "COLUMNS": "80", "NO_COLOR": "1",
                # a --write-profile sandbox keeps its ledger in the state directory: the test's
                "XDG_STATE_HOME": str(config.parent / "state")}, **extra)
    return env


@dataclass
class Served:
    url: str
    config: Path
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *argv: str, input: str | None = None, columns: int = 80,
            check: int | None = 0, env: dict[str, str] | None = None, process: bool = False,
            ) -> subprocess.CompletedProcess[str]:
        """``walletctl ARGV`` in this process (tests/cli_runner.py) with the served profiles
        file selected; ``process=True``: as a real ``python -m walletctl``."""
        full_env = {**self.env, "COLUMNS": str(columns), **(env or {})}
        if process:
            proc = subprocess.run(
                [*WALLETCTL, *argv], input=input, capture_output=True, text=True, timeout=60,
                env=full_env, check=False,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        else:
            proc = run_walletctl(argv, input=input, env=full_env)
        if check is not None:
            assert proc.returncode == check, (argv, proc.returncode, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc


@contextmanager
def serving(directory: Path) -> Iterator[Served]:
    """``walletctl sandbox serve --port 0 --write-profile sbx``, its profiles file and ready
    file in ``directory``; stopped (SIGTERM) on exit."""
    config = directory / "cfg" / "profiles.toml"
    ready = directory / "ready"
    env = walletctl_env(config)
    proc = subprocess.Popen(
        [*WALLETCTL, "sandbox", "serve", "--port", "0", "--quiet", "--ready-file", str(ready),
         "--write-profile", "sbx"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                out, errs = proc.communicate(timeout=5) if proc.poll() is not None else ("", "")
                pytest.fail(f"sandbox serve did not start: {out} {errs}")
            time.sleep(0.05)
        yield Served(ready.read_text().strip(), config, env)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@contextmanager
def embedded_serving(directory: Path) -> Iterator[Served]:
    """What :func:`serving` gives, for tests where the sandbox's process is not the point: the
    sandbox with ``serve``'s defaults in a thread of this process on a real port, and profile
    ``sbx`` written into a fresh profiles file by the function ``--write-profile`` calls (no
    process to start: about a second of CPU less per test)."""
    from walletctl.models.sandbox_values import DEFAULT_API_KEY
    from walletctl.ops.sandbox_admin import profile_table, write_profile
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = directory / "cfg" / "profiles.toml"
    env = walletctl_env(config)
    sandbox_config = SandboxConfig(quiet=True)
    with EmbeddedSandbox(sandbox_config) as sandbox:
        table = profile_table(sandbox.url, amount_format=sandbox_config.amount_format,
                              api_key=sandbox_config.api_key,
                              service_secret=sandbox_config.service_secret,
                              default_key=DEFAULT_API_KEY)
        write_profile(config, "sbx", table)
        yield Served(sandbox.url, config, env)


@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[Served]:
    with serving(tmp_path) as served:
        yield served


def wallet_event(sb: Served, profile: str, ref: str, directory: Path,
                 card: str | None = None) -> Path:
    """A browser-wallet ``event.detail`` file for a Token payment account (or the test
    ``card`` named), made the way the client script would (keys from ``walletctl keys``, the
    emulated wallet's token)."""
    import json

    import httpx

    keys = json.loads(sb.run("-p", profile, "-o", "json", "keys", "--show-secret").stdout)
    api_key = keys["apiKey"]
    cards = httpx.get(sb.url + "/_sandbox/wallet/cards", timeout=10).json()
    cards = cards.get("cards", cards) if isinstance(cards, dict) else cards
    card_id = card or next(c for c in cards if "token" in json.dumps(c).lower())["id"]
    pmd = httpx.post(sb.url + "/_sandbox/wallet/token", timeout=10, json={
        "cardId": card_id, "gatewayMerchantId": "M-1001", "publicKeyApi": api_key}).json()
    created = httpx.post(sb.url + "/api/v5/paymentAccounts", timeout=10,
                         headers={"Authorization": f"PublicApiKey {api_key}"},
                         json={"merchantId": "M-1001", "storeId": "S-01",
                               "clientSystemTransactionId": ref, "paymentData": pmd}).json()
    event = directory / f"{profile}-{ref}-event.json"
    event.write_text(json.dumps({
        "clientSystemTransactionId": ref, "transactionAccountId": created["transactionAccountId"],
        "transactionMethod": "WalletPay", "cryptogram": created.get("cryptogram"),
        "eciIndicator": created.get("eciIndicator")}))
    return event
