"""Shared helpers for the batch tests: profiles, sandbox seeding, ledger proofs."""

from __future__ import annotations

import asyncio
import os
import ssl
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from walletctl.models.base import loads

API_KEY = "sandbox-api-key"
MERCHANT = "M-BATCH"
STORE = "S-01"
AUTH = {"Authorization": f"PublicApiKey {API_KEY}"}
SRC = str(Path(__file__).resolve().parents[2] / "src")


def write_profile(directory: Path, base_url: str, *, timeout: float = 5.0) -> Path:
    path = directory / "profiles.toml"
    path.write_text(textwrap.dedent(f"""\
        default_profile = "sb"

        [profiles.sb]
        base_url = "{base_url}"
        merchant_id = "{MERCHANT}"
        store_id = "{STORE}"
        user_id = "batch-bot"
        currency = "EUR"
        timeout = {timeout}

        [profiles.sb.auth]
        scheme = "PublicApiKey"
        key = "{API_KEY}"
        """), encoding="utf-8")
    os.chmod(path, 0o600)
    return path


def checkout_body(ref: str, amount: str, currency: str = "EUR") -> dict[str, Any]:
    return {
        "merchantId": MERCHANT, "storeId": STORE, "userId": "batch-bot",
        "type": "ecom.preauthorization", "amount": amount, "currencyCode": currency,
        "clientSystemTransactionId": ref,
        "checkoutDetails": {"paymentMethod": "WalletV2"},
        "redirectDetails": {
            "returnUrl": "https://shop.example/r", "successUrl": "https://shop.example/s",
            "pendingUrl": "https://shop.example/p", "errorUrl": "https://shop.example/e",
            "cancelUrl": "https://shop.example/e", "refusedUrl": "https://shop.example/e",
        },
    }


async def _seed(url: str, refs: list[str], minor_amount: str, concurrency: int) -> None:
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=30) as client:

        async def one(ref: str) -> None:
            async with sem:
                r = await client.post("/api/v5/checkout", json=checkout_body(ref, minor_amount))
                assert r.status_code == 200, r.text
                r = await client.post(f"/_sandbox/checkouts/{ref}/approve")
                assert r.status_code == 200, r.text

        await asyncio.gather(*(one(ref) for ref in refs))


def seed_preauths(url: str, refs: list[str], minor_amount: str = "1000") -> None:
    """Approved pre-authorisations (public routes only: checkout + sandbox approve)."""
    asyncio.run(_seed(url, refs, minor_amount, 16))


def ledger(url: str) -> list[dict[str, Any]]:
    r = httpx.get(url + "/_sandbox/ledger", timeout=30)
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = loads(r.content)["transactions"]
    return rows


def set_faults(url: str, faults: dict[str, Any]) -> None:
    r = httpx.post(url + "/_sandbox/faults", json=faults, timeout=10)
    assert r.status_code == 200, r.text


def assert_exactly_once(
    rows: list[dict[str, Any]], refs: list[str], amount: Decimal, kind: str = "capture"
) -> None:
    """Every original has exactly one follow-up of ``kind`` for ``amount``: none missing,
    none doubled, nothing else moved."""
    follow = [r for r in rows if r["kind"] == kind]
    per_original = Counter(r["invoiceReference"] for r in follow)
    missing = [ref for ref in refs if per_original[ref] == 0]
    doubled = {ref: n for ref, n in per_original.items() if n > 1}
    strays = set(per_original) - set(refs)
    assert not missing, f"{len(missing)} rows never applied, e.g. {missing[:5]}"
    assert not doubled, f"rows applied more than once: {list(doubled.items())[:5]}"
    assert not strays, f"follow-ups on originals not in the batch: {sorted(strays)[:5]}"
    assert len(follow) == len(refs), (len(follow), len(refs))
    wrong = [r for r in follow if Decimal(r["amount"]) != amount or r["state"] != "Approved"]
    assert not wrong, wrong[:3]
    references = Counter(r["reference"] for r in follow)
    assert max(references.values()) == 1, references.most_common(3)


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1",
               PYTHONPATH=SRC + os.pathsep + env.get("PYTHONPATH", ""))
    return env


PYTHON = sys.executable


def seed_preauths_fast(store: Any, refs: list[str], amount: str = "10.00") -> None:
    """Approved pre-authorisations written straight into an in-process sandbox's store.

    The public routes (``seed_preauths``) cost two requests per row, ~25 s for 1,000 rows when
    the sandbox shares the test process; the big exactly-once tests use this instead. What is
    proven (the follow-ups) still goes through the real HTTP API.
    """
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    with store.atomic():
        for ref in refs:
            store.create_transaction(
                merchant_id=MERCHANT, store_id=STORE, reference=ref, kind="preauth",
                type_str="ecom.preauthorization", amount=Decimal(amount), currency="EUR",
                state="Approved", method="WalletV2", now=now)


@contextmanager
def http_gateway(handler: type[BaseHTTPRequestHandler],
                 tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A plain ``http.server`` gateway in a thread (HTTPS with ``tls``); yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
