"""End to end: ``walletctl sandbox serve`` as a subprocess on a real loopback port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox_fixtures import (
    AUTH_HEADERS,
    MERCHANT_ID,
    STORE_ID,
    ServedSandbox,
    make_checkout_body,
    make_followup_body,
)

from .helpers import APM, CHECKOUT


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedSandbox]:
    server = ServedSandbox("--db", str(tmp_path / "sandbox.db"))
    yield server
    server.kill()


def _lookup(url: str, ref: str) -> httpx.Response:
    return httpx.get(url + APM, headers=AUTH_HEADERS, params={
        "merchantId": MERCHANT_ID, "storeId": STORE_ID, "clientSystemTransactionId": ref})


def test_serve_full_lifecycle_then_sigterm(served: ServedSandbox) -> None:
    resp = httpx.post(served.url + CHECKOUT, headers=AUTH_HEADERS,
                      json=make_checkout_body("E2E-1", "5000", "ecom.preAuthorization"))
    assert resp.status_code == 200, resp.text
    page_url = resp.json()["redirectUrl"]
    assert page_url.startswith(served.url + "/pay/")
    page = httpx.get(page_url)
    assert page.status_code == 200
    assert "50.00 EUR" in page.text
    decided = httpx.post(page_url, data={"action": "approve"})
    assert decided.status_code == 303
    assert decided.headers["location"] == "https://shop.example/ok"
    cap = httpx.post(served.url + APM, headers=AUTH_HEADERS,
                     json=make_followup_body("E2E-1-C", "E2E-1", "capture", "2000"))
    assert cap.status_code == 200, cap.text
    assert [r["state"] for r in _lookup(served.url, "E2E-1").json()] == ["Approved", "Approved"]
    assert httpx.get(served.url + "/openapi.json", timeout=60).status_code == 200
    code, out, err = served.stop(signal.SIGTERM)
    assert code == 0, err
    assert "walletctl sandbox stopped" in out
    assert "Traceback" not in err


def test_restart_keeps_every_transaction(served: ServedSandbox, tmp_path: Path) -> None:
    httpx.post(served.url + CHECKOUT, headers=AUTH_HEADERS,
               json=make_checkout_body("PERSIST-1", "3000", "ecom.preAuthorization"))
    httpx.post(served.url + "/_sandbox/checkouts/PERSIST-1/approve")
    httpx.post(served.url + APM, headers=AUTH_HEADERS,
               json=make_followup_body("PERSIST-1-C", "PERSIST-1", "capture", "1000"))
    before = _lookup(served.url, "PERSIST-1").json()
    code, _, err = served.stop(signal.SIGINT)
    assert code == 0, err

    again = ServedSandbox("--db", str(tmp_path / "sandbox.db"))
    try:
        after = _lookup(again.url, "PERSIST-1").json()
        assert after == before
        # the rules still see the stored captures: only 20.00 EUR is left
        over = httpx.post(again.url + APM, headers=AUTH_HEADERS,
                          json=make_followup_body("PERSIST-1-C2", "PERSIST-1", "capture",
                                                  "2001"))
        assert over.status_code == 422
        ok = httpx.post(again.url + APM, headers=AUTH_HEADERS,
                        json=make_followup_body("PERSIST-1-C2", "PERSIST-1", "capture", "2000"))
        assert ok.status_code == 200
    finally:
        again.stop()


def test_serve_in_memory_and_reset(tmp_path: Path) -> None:
    server = ServedSandbox("--quiet", "--amount-format", "decimal")
    try:
        resp = httpx.post(server.url + CHECKOUT, headers=AUTH_HEADERS,
                          json=make_checkout_body("MEM-1", "12.34"))
        assert resp.status_code == 200, resp.text
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        reset = subprocess.run(
            [sys.executable, "-m", "walletctl", "sandbox", "reset", "--url", server.url],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )
        assert reset.returncode == 0, reset.stderr
        assert _lookup(server.url, "MEM-1").status_code == 404
    finally:
        code, _, err = server.stop(signal.SIGINT)
        assert code == 0, err


def test_serve_refuses_faults_off_loopback() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    proc = subprocess.run(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--host", "0.0.0.0",
         "--error-rate", "0.5"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "loopback" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_concurrent_captures_never_exceed_the_authorisation(live_sandbox: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    url = live_sandbox.url
    assert httpx.post(url + CHECKOUT, headers=AUTH_HEADERS, json=make_checkout_body(
        "RACE-1", "1000", "ecom.preAuthorization")).status_code == 200
    assert httpx.post(url + "/_sandbox/checkouts/RACE-1/approve").status_code == 200

    def capture(n: int) -> int:
        body = make_followup_body(f"RACE-1-C{n}", "RACE-1", "capture", "100")
        return httpx.post(url + APM, headers=AUTH_HEADERS, json=body, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(capture, range(24)))
    assert sorted(statuses) == [200] * 10 + [422] * 14, statuses
    rows = httpx.get(url + "/_sandbox/ledger").json()["transactions"]
    assert sum(Decimal(r["amount"]) for r in rows if r["kind"] == "capture") == Decimal("10.00")
