"""`GET /_sandbox/ledger` over a large ledger is read off the event loop, a page at a time:
another client's `/_sandbox/health` is answered all the while (it waited for the whole
ledger to be built before). `walletctl sandbox ledger` reads it as it comes, in every data
format. The precise figures (1M transactions) are benchmarks/sandbox_ledger.py's; the tests
here check orders of events, not durations."""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from cli_runner import run_walletctl
from walletctl.constants import SANDBOX_LEDGER_NDJSON
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox
from walletctl.sandbox.store import Store

TRANSACTIONS = 50_000


@pytest.fixture(scope="module")
def big() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig()) as sb:
        stamp = "2026-01-01T00:00:00+00:00"
        # Written in one statement: create_transaction costs a millisecond a row on a busy
        # machine, and what is tested is the reading.
        with sb.store.atomic() as db:
            db.executemany(
                "INSERT INTO transactions (id, merchant_id, store_id, reference, kind, "
                "type_str, amount, currency, state, method, created_at, updated_at) "
                "VALUES (?, 'M-1', 'S-1', ?, 'sale', 'ecom.sale', '10.00', 'EUR', "
                "'Approved', 'WalletV2', ?, ?)",
                ((f"id-{i}", f"BIG-{i}", stamp, stamp) for i in range(TRANSACTIONS)))
        yield sb


def test_health_is_answered_while_a_large_ledger_is_read(big: EmbeddedSandbox) -> None:
    # Health answers counted while the ledger's body arrives: between its first part and its
    # last, the loop served the other client. Built inside the event loop (as before), the
    # body came all at once after every health request had waited: none in between. An
    # order of events, not a duration (the latency itself is benchmarks/sandbox_ledger.py's).
    answered = [0]
    read: dict[str, object] = {}

    def read_ledger() -> None:
        body = bytearray()
        with httpx.Client(timeout=300) as client, \
                client.stream("GET", big.url + "/_sandbox/ledger") as resp:
            for part in resp.iter_raw():
                read.setdefault("first", answered[0])
                body += part
        read["last"] = answered[0]
        read["document"] = json.loads(bytes(body))

    reader = threading.Thread(target=read_ledger)
    with httpx.Client(base_url=big.url, timeout=300) as health:
        health.get("/_sandbox/health")  # connected before the read starts
        reader.start()
        while reader.is_alive():
            assert health.get("/_sandbox/health").status_code == 200
            answered[0] += 1
        reader.join()
    document = read["document"]
    assert isinstance(document, dict)
    assert document["count"] == TRANSACTIONS
    assert len(document["transactions"]) == TRANSACTIONS
    assert document["transactions"][-1]["reference"] == f"BIG-{TRANSACTIONS - 1}"
    assert answered[0] >= 5, answered
    first, last = int(str(read["first"])), int(str(read["last"]))
    assert last - first >= 3, (first, last, answered)


@pytest.mark.parametrize("fmt", ["ndjson", "csv", "json"])
def test_the_ledger_command_streams_every_transaction(big: EmbeddedSandbox, fmt: str) -> None:
    proc = run_walletctl(["-o", fmt, "sandbox", "ledger", "--url", big.url])
    assert proc.returncode == 0, proc.stderr
    if fmt == "ndjson":
        rows = [json.loads(line) for line in proc.stdout.splitlines()]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    else:
        document = json.loads(proc.stdout)
        assert document["count"] == TRANSACTIONS
        rows = document["transactions"]
    assert len(rows) == TRANSACTIONS
    assert [r["reference"] for r in rows[:2]] == ["BIG-0", "BIG-1"]
    assert rows[-1]["amount"] == "10.00"


@pytest.mark.parametrize("accept", ["application/json", SANDBOX_LEDGER_NDJSON])
def test_head_of_the_ledger_reads_a_page_at_most(big: EmbeddedSandbox, accept: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """HEAD ends with the first part of the body: the ledger's other pages (50 here) are
    never read to be dropped."""
    pages: list[int] = []
    read = big.store.ledger_pages

    def counted() -> Iterator[list[str]]:
        for page in read():
            pages.append(len(page))
            yield page

    monkeypatch.setattr(big.store, "ledger_pages", counted)
    # One kept-alive connection, as a client that sends more requests has: the server is not
    # told by a closed connection that nobody reads on.
    with httpx.Client(base_url=big.url, headers={"Accept": accept}, timeout=120) as client:
        head = client.head("/_sandbox/ledger")
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-type"].startswith(accept)
        time.sleep(1)  # a page already being read when the answer ended is counted too
        assert len(pages) <= 2, len(pages)
        assert client.get("/_sandbox/ledger").status_code == 200
    assert sum(pages) >= TRANSACTIONS  # the same counter sees a whole GET


def test_the_ledger_is_the_json_the_store_holds() -> None:
    """Each transaction's JSON is written by SQLite; it is the text Python's own encoder
    wrote before (control characters, quotes, non-ASCII and NULLs alike)."""
    store = Store(None)
    awkward = "".join(map(chr, range(0x80))) + "é€\u2028\u2029\U0001f600\ufeff"
    with store.atomic() as db:
        db.execute("INSERT INTO transactions (id, merchant_id, store_id, reference, kind, "
                   "type_str, amount, currency, state, method, created_at, updated_at) "
                   "VALUES ('i-1', 'M-1', 'S-1', ?, 'sale', 'ecom.sale', '10.00', 'EUR', "
                   "'Approved', 'WalletV2', 't', 't')", (awkward,))
    (page,) = store.ledger_pages()
    expected = {"id": "i-1", "merchantId": "M-1", "storeId": "S-1", "reference": awkward,
                "invoiceReference": None, "kind": "sale", "type": "ecom.sale",
                "amount": "10.00", "currency": "EUR", "state": "Approved",
                "providerStateCode": None, "method": "WalletV2",
                "createdAt": "t", "updatedAt": "t"}
    assert page == [json.dumps(expected, ensure_ascii=False, separators=(",", ":"))]


class _OldSandbox(BaseHTTPRequestHandler):
    """A sandbox from before the ledger was streamed: the whole document, whatever the
    Accept header asks for."""

    def do_GET(self) -> None:
        body = json.dumps({"count": 2, "transactions": [
            {"reference": "OLD-1", "kind": "sale", "amount": "1.00", "currency": "EUR"},
            {"reference": "OLD-2", "kind": "sale", "amount": "2.00", "currency": "EUR"},
        ]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_sandbox_that_answers_the_whole_document_is_still_read() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OldSandbox)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proc = run_walletctl(["-o", "ndjson", "sandbox", "ledger", "--url",
                              f"http://127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["reference"] for line in proc.stdout.splitlines()] == \
        ["OLD-1", "OLD-2"]
