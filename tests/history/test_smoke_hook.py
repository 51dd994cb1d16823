"""`smoke` against a real gateway records its money moves; against a walletctl sandbox not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx

from walletctl.config.profile import AuthSettings, Profile
from walletctl.history.sqlite import SqliteHistory
from walletctl.ops.smoke.target import HistoryTransport


def _gateway(is_sandbox: bool) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/_sandbox/health":
            return httpx.Response(200 if is_sandbox else 404, json={})
        if request.url.path == "/api/v5/checkout":  # spec 2.2: only the redirect URL
            return httpx.Response(200, json={"redirectUrl": "https://gw.example/pay/1"})
        if request.method == "POST":
            body = json.loads(request.content)
            state = "Declined" if body.get("amount") == "1001" else "Approved"
            return httpx.Response(200, json={"state": state})
        return httpx.Response(200, json=[])

    return httpx.MockTransport(handle)


def _run(tmp_path: Path, is_sandbox: bool) -> list[tuple[object, ...]]:
    path = tmp_path / "h.sqlite3"
    os.environ["WALLETCTL_AUDIT_LOG"] = str(path)  # the root fixture restores it
    profile = Profile(name="live", base_url="https://gw.example", merchant_id="M",
                      store_id="S", user_id="u", auth=AuthSettings(key="tk-SMOKE-secret"))
    transport = HistoryTransport(_gateway(is_sandbox), profile, "run-7")
    with httpx.Client(transport=transport, base_url=profile.base_url) as client:
        client.get("/api/v5/apmTransactions", params={"clientSystemTransactionId": "S-1"})
        client.post("/api/v5/checkout", json={"clientSystemTransactionId": "S-1",
                                              "amount": "1234", "currencyCode": "EUR"})
        client.post("/api/v5/apmTransactions", json={
            "type": "ecom.refund", "clientSystemTransactionId": "S-1-REF1",
            "clientSystemInvoiceId": "S-1", "amount": "1001", "currencyCode": "EUR"})
    if not path.exists():
        return []
    with SqliteHistory(path) as store:
        return [(e.operation, e.original_ref, e.new_ref, e.amount, e.outcome, e.note)
                for e in store.entries()]


def test_smoke_against_a_gateway_records_each_money_move(tmp_path: Path) -> None:
    assert _run(tmp_path, is_sandbox=False) == [
        ("checkout", "S-1", "S-1", "12.34", "created", "smoke run run-7"),
        ("refund", "S-1", "S-1-REF1", "10.01", "declined", "smoke run run-7"),
    ]


def test_smoke_against_a_walletctl_sandbox_records_nothing(tmp_path: Path) -> None:
    assert _run(tmp_path, is_sandbox=True) == []


def test_a_gateway_that_refuses_the_connection_leaves_nothing_unknown(tmp_path: Path) -> None:
    """A stopped gateway (a real closed port): the connection is never made, so nothing was
    sent, and the history says so instead of leaving an entry to reconcile for ever."""
    import socket

    import pytest

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens there
    path = tmp_path / "h.sqlite3"
    os.environ["WALLETCTL_AUDIT_LOG"] = str(path)  # the root fixture restores it
    profile = Profile(name="live", base_url=f"http://127.0.0.1:{port}", merchant_id="M",
                      store_id="S", user_id="u", auth=AuthSettings(key="tk-SMOKE-secret"))
    transport = HistoryTransport(httpx.HTTPTransport(), profile, "run-8")
    with httpx.Client(transport=transport, base_url=profile.base_url) as client, \
            pytest.raises(httpx.ConnectError):
        client.post("/api/v5/checkout", json={"clientSystemTransactionId": "S-2",
                                              "amount": "1234", "currencyCode": "EUR"})
    with SqliteHistory(path) as store:
        assert [(e.operation, e.original_ref, e.outcome) for e in store.entries()] == [
            ("checkout", "S-2", "error")]
