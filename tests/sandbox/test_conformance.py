"""The proxy's checks in process: answers no gateway may give after the order's earlier ones,
answers in the wrong amount format (JSON log lines), and the recording's masking."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.conformance import Checker, OrderBook, Violation
from walletctl.sandbox.proxy import ProxyApp, ViolationLog
from walletctl.sandbox.recording import Recorder, read_recording
from walletctl.sandbox.server import EmbeddedSandbox

M, S = "M-1", "S-1"
LOOKUP = b"merchantId=M-1&storeId=S-1&clientSystemTransactionId=ORD-1"


def _checkout(amount: str = "1000") -> bytes:
    return json.dumps({
        "merchantId": M, "storeId": S, "userId": "u", "type": "ecom.preauthorization",
        "amount": amount, "currencyCode": "EUR", "clientSystemTransactionId": "ORD-1",
        "checkoutDetails": {"paymentMethod": "WalletV2"},
        "redirectDetails": {k: "https://shop.example/x" for k in (
            "returnUrl", "successUrl", "pendingUrl", "errorUrl", "cancelUrl", "refusedUrl")},
    }).encode()


def _record(ref: str, kind: str, state: str, amount: int,
            invoice: str | None = None) -> dict[str, Any]:
    return {"id": ref, "state": state, "currencyCode": "EUR", "transactionAmount": amount,
            "clientSystemTransactionId": ref, "clientSystemInvoiceId": invoice, "type": kind}


class Seen:
    def __init__(self) -> None:
        self.found: list[Violation] = []
        self.checker = Checker("minor", self.found.append)

    def exchange(self, method: str, path: str, body: bytes, status: int, answer: Any,
                 query: bytes = b"") -> list[Violation]:
        ex, _ = self.checker.request(method, path, query, body)
        return self.checker.answer(ex, status, json.dumps(answer).encode(), "application/json")

    def lookup(self, records: list[dict[str, Any]]) -> list[Violation]:
        return self.exchange("GET", "/api/v5/apmTransactions", b"", 200, records, LOOKUP)


@pytest.fixture
def seen() -> Seen:
    seen = Seen()
    assert seen.exchange("POST", "/api/v5/checkout", _checkout(), 200,
                         {"redirectUrl": "https://gw.example/pay/t"}) == []
    assert seen.lookup([_record("ORD-1", "ecom.preAuthorisation", "Approved", 1000)]) == []
    return seen


def test_a_state_that_changes_after_it_was_final_is_reported(seen: Seen) -> None:
    found = seen.lookup([_record("ORD-1", "ecom.preAuthorisation", "Declined", 1000)])
    assert [(v.direction, v.field) for v in found] == [("answer", "state")]
    assert "Declined after Approved" in found[0].rule


def test_records_whose_captures_exceed_the_authorised_amount_are_reported(seen: Seen) -> None:
    found = seen.lookup([
        _record("ORD-1", "ecom.preAuthorisation", "Approved", 1000),
        _record("CAP-1", "ecom.capture", "Approved", 800, "ORD-1"),
        _record("CAP-2", "ecom.capture", "Approved", 300, "ORD-1"),
    ])
    assert [v.field for v in found] == ["state"]
    assert "CAP-2" in found[0].rule
    assert "exceeds" in found[0].rule


def test_an_approved_answer_to_a_refused_follow_up_is_reported(seen: Seen) -> None:
    body = json.dumps({
        "merchantId": M, "storeId": S, "userId": "u", "type": "ecom.capture",
        "amount": "1500", "currencyCode": "EUR", "clientSystemTransactionId": "CAP-9",
        "clientSystemInvoiceId": "ORD-1", "apmDetails": {"apmProvider": "WalletV2"}}).encode()
    found = seen.exchange("POST", "/api/v5/apmTransactions", body, 200, {
        "id": "x", "state": "Approved", "currencyCode": "EUR",
        "clientSystemTransactionId": "CAP-9"})
    assert [(v.direction, v.field) for v in seen.found[-2:]] == [
        ("request", "amount"), ("answer", "state")]
    assert found[0].rule.startswith("Approved, but the order's earlier answers allow no such")


def test_an_error_answer_must_be_the_gateway_error_object(seen: Seen) -> None:
    found = seen.exchange("POST", "/api/v5/checkout", _checkout(), 400, {"error": "bad"})
    assert [v.field for v in found] == ["code"]


def test_an_order_never_seen_is_not_judged() -> None:
    seen = Seen()
    body = json.dumps({
        "merchantId": M, "storeId": S, "userId": "u", "type": "ecom.refund",
        "amount": "99999", "currencyCode": "EUR", "clientSystemTransactionId": "R-1",
        "clientSystemInvoiceId": "UNSEEN", "apmDetails": {"apmProvider": "WalletV2"}}).encode()
    ex, found = seen.checker.request("POST", "/api/v5/apmTransactions", b"", body)
    assert found == []
    assert ex.refused is None


def test_the_order_book_is_bounded() -> None:
    book = OrderBook(limit=3)
    for i in range(10):
        book.put((M, S, f"ref-{i}"))
    assert len(book) == 3
    assert book.get((M, S, "ref-0")) is None
    assert book.get((M, S, "ref-9")) is not None


# -- the proxy in process, in front of a decimal sandbox, reading minor amounts -----------------


@pytest.fixture
def decimal_gateway() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(amount_format="decimal", quiet=True)) as sandbox:
        yield sandbox


def test_answers_in_another_amount_format_are_json_lines(decimal_gateway: EmbeddedSandbox,
                                                         tmp_path: Path) -> None:
    stream = io.StringIO()
    proxy = ProxyApp(decimal_gateway.url, amount_format="minor",
                     log=ViolationLog("json", stream), recorder=Recorder(tmp_path / "rec"))
    auth = {"Authorization": "PublicApiKey sandbox-api-key"}

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=proxy)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy",
                                     headers=auth) as client:
            statuses = [(await client.post(
                "/api/v5/checkout", content=_checkout("10.00"),
                headers={"content-type": "application/json"})).status_code]
            statuses.append((await client.post(
                f"/_sandbox/checkouts/ORD-1/approve?merchantId={M}&storeId={S}")).status_code)
            statuses.append((await client.get(
                "/api/v5/apmTransactions?" + LOOKUP.decode())).status_code)
        await proxy.close()
        return statuses

    assert asyncio.run(run()) == [200, 200, 200]
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert {"event": "violation", "direction": "request", "route": "POST /api/v5/checkout",
            "field": "amount"}.items() <= lines[0].items()
    answer = [line for line in lines if line["direction"] == "answer"]
    assert answer[0]["route"] == "GET /api/v5/apmTransactions"
    assert answer[0]["field"] == "[0].transactionAmount"
    recorded = read_recording(tmp_path / "rec")
    assert [ex.answer.status for ex in recorded] == [200, 200, 200]
    assert recorded[0].violations[0]["field"] == "amount"
    assert recorded[2].upstream_ms > 0


def test_the_recording_masks_credentials_card_numbers_and_structured_secrets(
        tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "rec")
    body = json.dumps({"paymentData": {"signedMessage": "s3cr3t-signed-message",
                                       "protocolVersion": "ECv2"},
                       "note": "card 4111111111111111", "amount": Decimal("1.50")},
                      default=str).encode()
    recorder.write(method="POST", path="/api/v5/paymentAccounts", query="",
                   request_headers={"Authorization": "Basic dXNlcjpzZXJ2aWNlLXNlY3JldC0x"},
                   request_body=body, status=200,
                   answer_headers={"content-type": "application/json"},
                   answer_body=b'{"apiKey": "pk_issued_key_value_1", "cryptogram": "AbCd1234"}',
                   upstream_ms=1.0, total_ms=2.0, violations=[])
    text = next((tmp_path / "rec").glob("*.exchange.json")).read_text()
    for secret in ("dXNlcjpzZXJ2aWNlLXNlY3JldC0x", "service-secret-1", "s3cr3t-signed",
                   "4111111111111111", "pk_issued_key_value_1", "AbCd1234"):
        assert secret not in text
    assert "411111******1111" in text
    with pytest.raises(ValueError, match="already holds a recording"):
        Recorder(tmp_path / "rec")


def test_an_unreachable_upstream_is_a_502_naming_the_proxy() -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proxy = ProxyApp(f"http://127.0.0.1:{port}", log=ViolationLog("text", io.StringIO()))

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=proxy)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
            answer = await client.get("/api/v5/apmTransactions")
        await proxy.close()
        return answer

    answer = asyncio.run(run())
    assert answer.status_code == 502
    assert answer.json()["details"]["message"].startswith("(proxy): the upstream gateway")


@pytest.mark.parametrize(("args", "message"), [
    (["--upstream", "ftp://gw.example"], "--upstream 'ftp://gw.example': must be an http(s)"),
    (["--upstream", "http://gw.example", "--log-format", "xml"], "--log-format: must be"),
    (["--upstream", "http://gw.example", "--amount-format", "cents"], "--amount-format: must"),
])
def test_proxy_options_are_checked_before_serving(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from walletctl.cli.main import app

    result = CliRunner().invoke(app, ["sandbox", "proxy", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_recording_directory_in_use_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from walletctl.cli.main import app

    (tmp_path / "000001.exchange.json").write_text("{}")
    result = CliRunner().invoke(app, ["sandbox", "proxy", "--upstream", "http://gw.example",
                                      "--record", str(tmp_path)])
    assert result.exit_code == 2
    assert "already holds a recording" in result.stderr


def test_the_body_budget_bounds_bodies_with_and_without_a_length(
        decimal_gateway: EmbeddedSandbox) -> None:
    proxy = ProxyApp(decimal_gateway.url, body_budget=1000,
                     log=ViolationLog("text", io.StringIO()))

    async def chunks() -> Any:
        for _ in range(3):
            yield b"x" * 400

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=proxy)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
            sized = await client.post("/api/v5/checkout", content=b"x" * 1200)
            chunked = await client.post("/api/v5/checkout", content=chunks())
            small = await client.post("/api/v5/checkout", content=b"{}")
        await proxy.close()
        return [sized.status_code, chunked.status_code, small.status_code]

    assert asyncio.run(run()) == [503, 503, 415]  # the small one reached the gateway
    assert proxy.held == 0


def test_a_key_cannot_forge_a_line_and_many_violations_are_counted() -> None:
    seen = Seen()
    body = {f"bad\nviolation answer forged{i}": 1 for i in range(30)}
    _, found = seen.checker.request("POST", "/api/v5/publicKeys", b"", json.dumps(body).encode())
    assert len(found) == 21
    assert found[-1].rule == "12 more violations not shown"  # 30 unknown keys, 2 missing
    stream = io.StringIO()
    log = ViolationLog("text", stream)
    for violation in found:
        log(violation)
    assert all(line.startswith("violation request ") for line in stream.getvalue().splitlines())
