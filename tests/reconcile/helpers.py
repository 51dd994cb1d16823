"""What the recon tests share: money moved straight at the sandbox (raw HTTP, not walletctl's
client), and history entries written through the store's own API."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import httpx

from money.conftest import TYPES, WALLETCTL, Desk, Result
from walletctl.history.store import Completion, HistoryStore, Intent
from walletctl.models.entries import now_utc


def post_followup(desk: Desk, original: str, new_ref: str, amount: str,
                  operation: str = "refund", *, user: str = "dashboard") -> dict[str, Any]:
    """A follow-up POSTed straight to the sandbox's /api/v5/apmTransactions with httpx, the
    way a dashboard or another tool would: nothing of walletctl's is involved."""
    body = {
        "merchantId": desk.merchant_id, "storeId": desk.store_id, "userId": user,
        "type": TYPES[operation], "amount": str(int(Decimal(amount).scaleb(2))),
        "currencyCode": "EUR", "clientSystemTransactionId": new_ref,
        "clientSystemInvoiceId": original, "apmDetails": {"apmProvider": "WalletV2"},
    }
    resp = httpx.post(f"{desk.sandbox_url}/api/v5/apmTransactions", json=body, timeout=10,
                      headers={"Authorization": f"PublicApiKey {desk.api_key}"})
    assert resp.status_code == 200, (resp.status_code, resp.text)
    answer: dict[str, Any] = resp.json()
    assert answer.get("state") == "Approved", answer
    return answer


def write_entry(store: HistoryStore, desk: Desk, original: str, new_ref: str, amount: str,
                outcome: str | None, *, operation: str = "refund",
                profile: str = "desk-a", merchant: str | None = None) -> int:
    """One entry of ``operation`` as the recorder would write it (``outcome`` None: begun,
    never completed, so it reads unknown)."""
    entry = store.begin(Intent(
        time=now_utc(), os_user="tester", host="desk-pc", profile=profile,
        base_url="http://gateway.invalid", operation=operation, original_ref=original,
        new_ref=new_ref, amount=amount, currency="EUR",
        merchant_id=merchant or desk.merchant_id,
        store_id=desk.store_id))
    if outcome is not None:
        store.complete(entry, Completion(time=now_utc(), outcome=outcome))
    return entry


def run_together(desk: Desk, *argvs: Sequence[str], expect: int,
                 env: dict[str, str] | None = None) -> list[Result]:
    """Several ``python -m walletctl`` at once (independent reads: the suite stays fast),
    each required to exit ``expect`` without a traceback."""
    procs = [subprocess.Popen([*WALLETCTL, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env={**desk.env, **(env or {})}) for argv in argvs]
    results = [Desk.finish(proc, argv) for proc, argv in zip(procs, argvs, strict=True)]
    for result in results:
        assert result.code == expect, f"expected exit {expect}{result}"
        assert "Traceback" not in result.stderr, f"a traceback{result}"
    return results
