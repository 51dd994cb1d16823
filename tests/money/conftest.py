"""Fixtures for the money-protocol tests: walletctl in-process (a real process where two at
once or a kill is the point), a served sandbox on a real port, and the tests' own fault proxy
in front of it.

``desk`` -> :class:`Desk`
    ``served_sandbox`` (the sandbox in this process on a real port, and the profile ``sbx``
    that ``walletctl sandbox serve --port 0 --write-profile sbx`` would write) plus a
    :class:`FaultProxy` forwarding to it, and two more profiles made ONLY with
    ``walletctl profile add``: ``desk-a`` (``http://127.0.0.1:PROXYPORT``) and ``desk-b``
    (``http://localhost:PROXYPORT``), with the merchant, store and user ids, amount format,
    currency and redirect URLs ``sbx`` has. ``profile add`` takes no inline key (by design: it
    would land in the shell history), so both read the same key as ``sbx`` from
    ``$WALLETCTL_MONEY_KEY``, which every command of the desk gets (the values are read from
    the profiles file ``--write-profile`` wrote). Every command of a test
    shares one history file (``WALLETCTL_AUDIT_LOG``): one support desk, one machine.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli_runner import WALLETCTL as WALLETCTL  # re-exported: the tests of this area use it
from cli_runner import run_walletctl
from first_hour_fixtures import Served, embedded_serving

from .faultproxy import FaultProxy

KEY_ENV = "WALLETCTL_MONEY_KEY"
TYPES = {"capture": "ecom.capture", "refund": "ecom.refund",
         "reverse": "ecom.reversalPreauthorization"}


@dataclass
class Result:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (f"\n$ walletctl {' '.join(self.argv)}\nexit {self.code}\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")

    def json(self) -> Any:
        try:
            return json.loads(self.stdout)
        except ValueError as exc:
            raise AssertionError(f"stdout is not one JSON document: {exc}{self}") from exc


@dataclass
class Desk:
    """One sandbox, one proxy in front of it, the profiles ``sbx``, ``desk-a``, ``desk-b``."""

    sandbox_url: str
    proxy: FaultProxy
    env: dict[str, str]
    api_key: str
    merchant_id: str
    store_id: str
    tmp: Path

    # -- walletctl ---------------------------------------------------------------------------

    def run(self, *argv: str, expect: int | Sequence[int] | None = None,
            timeout: float = 60, env: dict[str, str] | None = None,
            process: bool = False) -> Result:
        """``walletctl ARGV`` in this process (:mod:`cli_runner`: empty stdin, stdout/stderr
        captured, the desk's environment); ``process=True``: as a real ``python -m walletctl``
        (``timeout`` applies to it). Two at once, or a kill, go through :meth:`popen`.

        ``expect``: the exit code(s) the test requires; a mismatch fails with the whole output.
        """
        if process:
            proc = subprocess.run([*WALLETCTL, *argv], capture_output=True, text=True,
                                  timeout=timeout, env={**self.env, **(env or {})},
                                  stdin=subprocess.DEVNULL, check=False)
        else:
            proc = run_walletctl(argv, env={**self.env, **(env or {})})
        result = Result(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
        if expect is not None:
            wanted = (expect,) if isinstance(expect, int) else tuple(expect)
            assert result.code in wanted, f"expected exit {' or '.join(map(str, wanted))}{result}"
        assert "Traceback" not in result.stderr, f"a traceback{result}"
        return result

    def popen(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*WALLETCTL, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                env=self.env)

    @staticmethod
    def finish(proc: subprocess.Popen[str], argv: Sequence[str], timeout: float = 60) -> Result:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"timed out after {timeout} s"
                                 f"{Result(tuple(argv), proc.returncode, out, err)}") from None
        return Result(tuple(argv), proc.returncode, out, err)

    def history(self) -> list[dict[str, Any]]:
        entries = self.run("-o", "json", "history", expect=0).json()
        assert isinstance(entries, list), entries
        return entries

    # -- the gateway's own view (straight to the sandbox, never through the proxy) -----------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"PublicApiKey {self.api_key}"}

    def records(self, ref: str) -> list[dict[str, Any]]:
        """What the gateway holds for ``ref`` (the original and its follow-ups); [] if none."""
        resp = httpx.get(f"{self.sandbox_url}/api/v5/apmTransactions", timeout=10,
                         headers=self._headers(),
                         params={"merchantId": self.merchant_id, "storeId": self.store_id,
                                 "clientSystemTransactionId": ref})
        if resp.status_code == 404:
            return []
        resp.raise_for_status()
        data = resp.json()
        assert isinstance(data, list), data
        return data

    def followups(self, ref: str, operation: str) -> list[dict[str, Any]]:
        """The gateway's ``operation`` records (any state) whose original is ``ref``."""
        return [r for r in self.records(ref)
                if r.get("clientSystemInvoiceId") == ref and r.get("type") == TYPES[operation]]

    # -- seeding the sandbox (straight to it: fast, and no history entries) ------------------

    def checkout(self, ref: str, amount: str, *, kind: str = "sale", currency: str = "EUR",
                 approve: bool = True) -> str:
        """An approved sale (fully captured) or pre-authorisation of ``amount`` (major units)."""
        minor = str(int(Decimal(amount).scaleb(2)))
        body = {
            "merchantId": self.merchant_id, "storeId": self.store_id, "userId": "ops-bot",
            "type": "ecom.sale" if kind == "sale" else "ecom.preauthorization",
            "amount": minor, "currencyCode": currency, "clientSystemTransactionId": ref,
            "checkoutDetails": {"paymentMethod": "WalletV2"},
            "redirectDetails": {k: "https://shop.example/ok" for k in (
                "returnUrl", "successUrl", "pendingUrl", "errorUrl", "cancelUrl", "refusedUrl")},
        }
        resp = httpx.post(f"{self.sandbox_url}/api/v5/checkout", json=body,
                          headers=self._headers(), timeout=10)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        if approve:
            resp = httpx.post(f"{self.sandbox_url}/_sandbox/checkouts/{ref}/approve", timeout=10)
            assert resp.status_code == 200, (resp.status_code, resp.text)
            state = [r for r in self.records(ref) if r["clientSystemTransactionId"] == ref]
            assert [r["state"] for r in state] == ["Approved"], state
        return ref

    def sale(self, ref: str, amount: str = "50.00") -> str:
        return self.checkout(ref, amount, kind="sale")

    def preauth(self, ref: str, amount: str = "40.00") -> str:
        return self.checkout(ref, amount, kind="preauth")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8].upper()}"


def _profile_add(served_env: dict[str, str], name: str, base_url: str,
                 shown: dict[str, Any]) -> None:
    redirects = shown["redirects"]
    argv = ["profile", "add", name, "--base-url", base_url,
            "--merchant-id", shown["merchant_id"], "--store-id", shown["store_id"],
            "--user-id", shown["user_id"], "--amount-format", shown["amount_format"],
            "--currency", shown["currency"], "--timeout", "10", "--key-env", KEY_ENV,
            "--success-url", redirects["success_url"], "--error-url", redirects["error_url"],
            "--pending-url", redirects["pending_url"], "--return-url", redirects["return_url"]]
    proc = run_walletctl(argv, env=served_env)
    assert proc.returncode == 0, str(Result(tuple(argv), proc.returncode, proc.stdout,
                                            proc.stderr))


@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[Served]:
    """The sandbox of the money tests: in this process, on a real port (the served process
    is the point of the first-hour tests, not of these)."""
    with embedded_serving(tmp_path) as served:
        yield served


@pytest.fixture
def desk(served_sandbox: Served, tmp_path: Path) -> Iterator[Desk]:
    env = dict(served_sandbox.env)
    # sbx as `--write-profile` wrote it (read, never written, here: it holds the key inline)
    sbx = tomllib.loads(served_sandbox.config.read_text())["profiles"]["sbx"]
    shown = {**sbx, "amount_format": sbx.get("amount_format", "minor")}
    assert sbx["auth"]["scheme"] == "PublicApiKey", sbx["auth"]
    api_key = sbx["auth"]["key"]
    env.update({KEY_ENV: api_key, "WALLETCTL_AUDIT_LOG": str(tmp_path / "history.sqlite3"),
                "PYTHONUNBUFFERED": "1"})
    proxy = FaultProxy(served_sandbox.url)
    try:
        _profile_add(env, "desk-a", f"http://127.0.0.1:{proxy.port}", shown)
        _profile_add(env, "desk-b", f"http://localhost:{proxy.port}", shown)
        yield Desk(served_sandbox.url, proxy, env, api_key, shown["merchant_id"],
                   shown["store_id"], tmp_path)
    finally:
        proxy.close()
