"""No request costs more than its size: against a real ``walletctl sandbox serve``
subprocess, each number that used to stall the server (``1e999999999`` in every integer
field, fault settings in the header and the admin route, the clock, amounts, a query) is
refused at once while a second client polls ``/_sandbox/health``; integer fields take JSON
integers only; credentials come before queries; the seed route reads keys like every route;
one type for ``transactionAmount``."""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS, MERCHANT_ID, STORE_ID, make_checkout_body
from timescale import scaled
from walletctl.models.sandbox_values import DEFAULT_HEADER_BUDGET

from .test_bounded_resources import _rss_mb, descriptor_limit
from .test_connections import Served, read_answer, serve

HUGE = "1e999999999"
FAULT_SETTINGS = ("latency", "jitter", "error-rate", "status", "throttle-rate", "retry-after",
                  "drop-rate", "error-after-rate", "seed")
LOOKUP = "/api/v5/apmTransactions"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serve("--clock-control") as sb:
        yield sb


def _checkout(ref: str, *, details: str = "", cart: str = "", amount: str = '"1234"') -> bytes:
    """A checkout body as text, so that a number is sent exactly as written."""
    body = make_checkout_body(ref)
    body.pop("amount")
    text = json.dumps(body)[:-1] + f', "amount": {amount}'
    if details:
        text = text.replace('"checkoutDetails": {', '"checkoutDetails": {' + details + ", ")
    if cart:
        text += (', "shoppingCartDetails": {"itemDetails": [{"productId": "p", "productName": '
                 f'"n", {cart}, "unitAmount": "1234", "totalAmount": "1234"}}]}}')
    return (text + "}").encode()


def _wallet_token(number: str) -> bytes:
    return (b'{"cardId": "visa-token", "gatewayMerchantId": "M-1", "publicKeyApi": "k", '
            b'"messageExpirySeconds": ' + number.encode() + b"}")


# (name, method, path, headers, body, status, start of the message)
STALLING: list[tuple[str, str, str, dict[str, str], bytes, int, str]] = [
    ("fault header latency=1e1000000", "GET", LOOKUP + "?merchantId=M&storeId=S&"
     "clientSystemTransactionId=R", {**AUTH_HEADERS, "X-Sandbox-Fault": "latency=1e1000000"},
     b"", 400, "X-Sandbox-Fault: latency: must be a whole number"),
    *[(f"fault header {name}={HUGE}", "GET", LOOKUP + "?merchantId=M&storeId=S&"
       "clientSystemTransactionId=R", {**AUTH_HEADERS, "X-Sandbox-Fault": f"{name}={HUGE}"},
       b"", 400, f"X-Sandbox-Fault: {name}: ") for name in FAULT_SETTINGS],
    ("faults route latency=1e300000", "POST", "/_sandbox/faults", JSON,
     b'{"latency": 1e300000}', 400, "latency: must be a whole number"),
    *[(f"faults route {name}={HUGE}", "POST", "/_sandbox/faults", JSON,
       f'{{"{name}": {HUGE}}}'.encode(), 400, f"{name}: ") for name in FAULT_SETTINGS],
    *[(f"redirectUrlTimeout={number}", "POST", "/api/v5/checkout", {**AUTH_HEADERS, **JSON},
       _checkout(f"RT-{number}", details=f'"redirectUrlTimeout": {number}'), 400,
       "checkoutDetails.redirectUrlTimeout: must be an integer")
      for number in ("1e8000000", HUGE)],
    *[(f"productQuantity={number}", "POST", "/api/v5/checkout", {**AUTH_HEADERS, **JSON},
       _checkout(f"PQ-{number}", cart=f'"productQuantity": {number}'), 400,
       "shoppingCartDetails.itemDetails[0].productQuantity: must be an integer")
      for number in ("1e8000000", HUGE)],
    *[(f"messageExpirySeconds={HUGE} on {path}", "POST", path, JSON, _wallet_token(HUGE), 400,
       "messageExpirySeconds: must be an integer")
      for path in ("/wallet/token", "/_sandbox/wallet/token")],
    (f"amount={HUGE}", "POST", "/api/v5/checkout", {**AUTH_HEADERS, **JSON},
     _checkout("AM-1", amount=HUGE), 400, "amount: must be written without an exponent"),
    (f"advanceSeconds={HUGE}", "POST", "/_sandbox/clock", JSON,
     f'{{"advanceSeconds": {HUGE}}}'.encode(), 400, "advanceSeconds: "),
    (f"seed amount {HUGE}", "POST", "/_sandbox/seed", JSON,
     json.dumps({"merchantId": "M", "storeId": "S", "currency": "EUR", "kind": "sale",
                 "transactions": [{"reference": "S-1", "amount": HUGE}]}).encode(), 400,
     "transactions[0].amount: "),
    (f"query clientSystemTransactionId={HUGE}", "GET", LOOKUP + "?merchantId=M&storeId=S&"
     f"clientSystemTransactionId={HUGE}", AUTH_HEADERS, b"", 404, ""),
]


class HealthPoller:
    """Polls ``/_sandbox/health`` on its own connection until stopped; keeps the latencies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._polled = threading.Event()  # the first poll is answered (or failed)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    status = client.get(self.url + "/_sandbox/health").status_code
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))
                    self._polled.set()
                    continue
                self.latencies.append(time.perf_counter() - start)
                self._polled.set()
                if status != 200:
                    self.errors.append(f"status {status}")
                time.sleep(0.005)

    def __enter__(self) -> HealthPoller:
        """Returns once polling is live (its first poll answered), so whatever the test sends
        next is measured even on a machine slow to start the poller's thread and connection."""
        self._thread.start()
        self._polled.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def test_no_number_stalls_the_server(served: Served) -> None:
    """Each input, sent again and again from one client while another polls health."""
    worst_request: dict[str, float] = {}
    with HealthPoller(served.url) as poller, httpx.Client(timeout=30) as client:
        time.sleep(0.1)
        for _ in range(5):
            for name, method, path, headers, body, status, message in STALLING:
                start = time.perf_counter()
                answer = client.request(method, served.url + path, headers=headers,
                                        content=body)
                took = time.perf_counter() - start
                worst_request[name] = max(worst_request.get(name, 0.0), took)
                assert answer.status_code == status, (name, answer.text)
                if message:
                    assert answer.json()["details"]["message"].startswith(message), (
                        name, answer.text)
    assert not poller.errors, poller.errors
    assert len(poller.latencies) > 10
    worst = max(poller.latencies)
    slowest = max(worst_request, key=worst_request.__getitem__)
    print(f"\nhealth polls: {len(poller.latencies)}, worst {worst * 1000:.1f} ms; slowest "
          f"refusal: {slowest} {worst_request[slowest] * 1000:.1f} ms")
    assert worst < scaled(1.0), f"health took {worst:.3f} s while numbers were refused"
    assert worst_request[slowest] < 1.0, (slowest, worst_request[slowest])


@pytest.mark.parametrize("number", ['"900"', "900.0", "9e2", "-0", "true", "1" + "0" * 70])
def test_integer_fields_take_json_integers_only(served: Served, number: str) -> None:
    rule = {'"900"': "not a string", "900.0": "no fraction or exponent",
            "9e2": "no fraction or exponent", "-0": "0, not -0", "true": "not a boolean",
            "1" + "0" * 70: "at most 64 digits"}[number]
    sent = [("checkoutDetails.redirectUrlTimeout", "/api/v5/checkout",
             _checkout("INT-1", details=f'"redirectUrlTimeout": {number}')),
            ("shoppingCartDetails.itemDetails[0].productQuantity", "/api/v5/checkout",
             _checkout("INT-2", cart=f'"productQuantity": {number}')),
            ("messageExpirySeconds", "/wallet/token", _wallet_token(number))]
    for field, path, body in sent:
        answer = httpx.post(served.url + path, content=body, headers={**AUTH_HEADERS, **JSON})
        assert answer.status_code == 400, answer.text
        message = answer.json()["details"]["message"]
        assert message.startswith(f"{field}: must be an integer"), message
        assert rule in message, message


def test_an_integer_field_still_takes_an_integer(served: Served) -> None:
    answer = httpx.post(served.url + "/api/v5/checkout", headers={**AUTH_HEADERS, **JSON},
                        content=_checkout("INT-OK", details='"redirectUrlTimeout": 900'))
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("amount", ['"+4000"', '" 4000"', '"4e3"', "4e3"])
def test_an_amount_is_digits(served: Served, amount: str) -> None:
    answer = httpx.post(served.url + "/api/v5/checkout", headers={**AUTH_HEADERS, **JSON},
                        content=_checkout("AMT-1", amount=amount))
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["message"].startswith("amount: "), answer.text


@pytest.mark.parametrize("path", ["/api/v5/paymentAccounts/ta_x", "/api/v5/publicKeys/current"])
def test_credentials_are_checked_before_the_query(served: Served, path: str) -> None:
    for query in ("", "?merchantId=M&merchantId=N"):
        answer = httpx.get(served.url + path + query)
        assert answer.status_code == 401, answer.text
    answer = httpx.get(served.url + path, headers=AUTH_HEADERS)
    assert answer.status_code == 400, answer.text  # with a credential: the query's rule


def test_the_seed_route_reads_keys_like_every_route(served: Served) -> None:
    body: dict[str, Any] = {"MERCHANTID": "M-SEED", "storeid": "S-1", "Currency": "eur",
                            "KIND": "sale",
                            "Transactions": [{"Reference": "SEED-CASE-1", "AMOUNT": "10.00"}]}
    answer = httpx.post(served.url + "/_sandbox/seed", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["created"] == 1
    python_names = {"merchant_id": "M-SEED", "store_id": "S-1", "currency": "EUR",
                    "kind": "sale", "transactions": [{"reference": "SEED-PY-1",
                                                      "amount": "10.00"}]}
    answer = httpx.post(served.url + "/_sandbox/seed", json=python_names)
    assert answer.status_code == 400, answer.text
    assert "merchant_id: is not a field of this request" in answer.json()["details"]["message"]


def test_transaction_amount_is_a_number_wherever_a_record_is_answered(served: Served) -> None:
    checkout = httpx.post(served.url + "/api/v5/checkout", headers={**AUTH_HEADERS, **JSON},
                          content=_checkout("TYPE-1", amount='"4000"'))
    assert checkout.status_code == 200, checkout.text
    approved = httpx.post(served.url + "/_sandbox/checkouts/TYPE-1/approve").json()
    looked_up = httpx.get(served.url + LOOKUP, headers=AUTH_HEADERS, params={
        "merchantId": MERCHANT_ID, "storeId": STORE_ID, "clientSystemTransactionId": "TYPE-1"})
    assert approved["record"]["transactionAmount"] == 4000
    assert looked_up.json()[0]["transactionAmount"] == 4000


# -- work that grows with a request: off the loop (issue 50) -----------------------------------


def _seed_body(prefix: str, n: int) -> bytes:
    return json.dumps({"merchantId": "M-LOOP", "storeId": "S-1", "currency": "EUR",
                       "kind": "sale", "transactions": [
                           {"reference": f"{prefix}-{i}", "amount": "10.00"}
                           for i in range(n)]}).encode()


def _megabyte_bodies() -> list[tuple[str, str, bytes]]:
    """(name, path, just under 1 MB of JSON) on routes that need no credential."""
    zeros = b'{"x": [' + b",".join([b"0"] * 499_990) + b"]}"
    objects = b'{"x": [' + b",".join([b"{}"] * 330_000) + b"]}"
    keys = b"{" + b",".join(b'"k%d": 1' % i for i in range(80_000)) + b"}"
    nested = b'{"x": ' + b'{"a": [' * 31 + b"0" * 900_000 + b"]}" * 31 + b"}"
    bodies = [("500k zeros", "/wallet/token", zeros), ("330k objects", "/_sandbox/faults", objects),
              ("80k keys", "/demo/merchant/api/result", keys),
              ("deep nesting", "/_sandbox/wallet/token", nested)]
    assert all(len(body) < 1_000_000 for _name, _path, body in bodies)
    return bodies


def test_no_request_holds_the_loop(served: Served) -> None:
    """A 10,000-row seed, about 1 MB bodies of several shapes and a full ledger read, each
    while a second client polls health: its worst latency stays low (goal < 100 ms, asserted
    < 1 s: the machine may be loaded; benchmarks/sandbox_loop.py prints the figures)."""
    work: list[tuple[str, str, str, bytes, int]] = [
        ("seed 10,000", "POST", "/_sandbox/seed", _seed_body("LOOP", 10_000), 200),
        *[(name, "POST", path, body, 400) for name, path, body in _megabyte_bodies()],
        ("full ledger", "GET", "/_sandbox/ledger", b"", 200),
    ]
    worst: dict[str, float] = {}
    with httpx.Client(timeout=120) as client:
        for name, method, path, body, status in work:
            with HealthPoller(served.url) as poller:
                time.sleep(0.1)
                answer = client.request(method, served.url + path, content=body, headers=JSON)
                time.sleep(0.05)
            assert answer.status_code == status, (name, answer.text[:300])
            assert not poller.errors, poller.errors
            worst[name] = max(poller.latencies)
    assert len(answer.json()["transactions"]) >= 10_000
    print("\nworst health latency: " + ", ".join(f"{name} {ms * 1000:.0f} ms"
                                                  for name, ms in worst.items()))
    assert max(worst.values()) < 1.0, worst


@pytest.mark.parametrize("value", ['"١٠٠٠"', '"1_000"', '"+1000"', '" 1000 "', "1e3",
                                   '"1000"', "1000.0", "true"])
def test_advance_seconds_follows_the_integer_rule(served: Served, value: str) -> None:
    answer = httpx.post(served.url + "/_sandbox/clock", headers=JSON,
                        content=f'{{"advanceSeconds": {value}}}'.encode())
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["message"].startswith("advanceSeconds: must be an integer")


def test_an_error_quotes_a_short_prefix_of_a_rejected_value(served: Served) -> None:
    big = "k" * 900_000
    sent = [("/api/v5/checkout", {**AUTH_HEADERS, **JSON}, _checkout("ECHO-1")[:-1]
             + f', "{big}": 1}}'.encode()),
            ("/_sandbox/faults", JSON, f'{{"{big}": 1}}'.encode())]
    for path, headers, body in sent:
        answer = httpx.post(served.url + path, headers=headers, content=body)
        assert answer.status_code == 400, answer.text[:300]
        assert len(answer.content) < 1200, len(answer.content)
        assert "k… (90000" in answer.json()["details"]["message"]
    answer = httpx.get(served.url + LOOKUP, headers=AUTH_HEADERS, params={
        "merchantId": "m" * 30_000, "storeId": "S", "clientSystemTransactionId": "R"})
    assert len(answer.content) < 1200, len(answer.content)


@pytest.mark.parametrize("target", ["http://evil.example/_sandbox/ledger",
                                    "HTTP://user@evil.example:80/_sandbox/health?x=1"])
def test_an_absolute_form_target_meets_the_host_check(served: Served, target: str) -> None:
    with served.connect() as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
                     "Connection: close\r\n\r\n".encode())
        assert sock.recv(200).startswith(b"HTTP/1.1 403 "), target
    with served.connect() as sock:  # its own name: answered
        sock.sendall(f"GET http://localhost:{served.port}/_sandbox/health HTTP/1.1\r\n"
                     "Host: evil.example\r\nConnection: close\r\n\r\n".encode())
        assert sock.recv(200).startswith(b"HTTP/1.1 200 ")


def test_a_stop_ends_a_delayed_request_at_once() -> None:
    """An injected 8 s delay in flight: SIGTERM ends it with a 503 and the process exits well
    before the delay would have (goal 1 s; the serve helper asserts no traceback)."""
    with serve("--latency", "8000") as sb, sb.connect() as sock:
        sock.sendall(f"GET {LOOKUP}?merchantId=M&storeId=S&clientSystemTransactionId=R "
                     f"HTTP/1.1\r\nHost: 127.0.0.1:{sb.port}\r\nAuthorization: "
                     f"{AUTH_HEADERS['Authorization']}\r\nConnection: close\r\n\r\n".encode())
        # in flight once the server has answered a request sent after it (health is never
        # delayed); a fixed pause lost the race on a loaded machine: the stop came first and
        # the connection was reset, unanswered
        assert httpx.get(sb.url + "/_sandbox/health", timeout=30).status_code == 200
        start = time.perf_counter()
        sb.proc.terminate()
        sb.proc.wait(timeout=30)
        took = time.perf_counter() - start
        answer = read_answer(sock, 30)
    print(f"\nstopped in {took:.2f} s with an 8 s delay in flight")
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:300]
    assert took < 5.0, took


# -- memory per connection and in total (issue 50): RSS before, while, after ------------------


@pytest.fixture
def descriptors() -> Iterator[None]:
    with descriptor_limit(9000):
        yield


def _worst_health(url: str, seconds: float) -> float:
    with HealthPoller(url) as poller:
        time.sleep(seconds)
    assert not poller.errors, poller.errors[:3]
    return max(poller.latencies)


@pytest.mark.slow
def test_slow_ledger_readers_hold_a_bounded_buffer_each(descriptors: None) -> None:
    """500 clients read a 50,000-transaction ledger 4 KB a second: each holds about a page and
    its connection's buffer (before: about 1 MB each, kept after they left), and what they held
    is returned when they go."""
    with serve(nofile=9000) as sb:
        for n in range(5):
            answer = httpx.post(sb.url + "/_sandbox/seed", headers=JSON, timeout=120,
                                content=_seed_body(f"MEM{n}", 10_000))
            assert answer.status_code == 200, answer.text
        time.sleep(0.5)
        before = _rss_mb(sb.proc.pid)
        socks = []
        for _ in range(500):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", sb.port))
            sock.sendall(f"GET /_sandbox/ledger HTTP/1.1\r\nHost: 127.0.0.1:{sb.port}\r\n\r\n"
                         .encode())
            sock.setblocking(False)
            socks.append(sock)
        peak, worst = before, 0.0
        try:
            for _ in range(4):
                for sock in socks:
                    with contextlib.suppress(OSError):
                        sock.recv(4096)
                worst = max(worst, _worst_health(sb.url, 1.0))
                peak = max(peak, _rss_mb(sb.proc.pid))
        finally:
            for sock in socks:
                sock.close()
        time.sleep(2.0)
        after = _rss_mb(sb.proc.pid)
        print(f"\n500 slow ledger readers: RSS before {before:.1f} MB, while {peak:.1f} MB, "
              f"after {after:.1f} MB; health worst {worst * 1000:.0f} ms")
        assert peak - before < 100, (before, peak)  # was +468 MB; +45 MB measured
        # what the readers held is given back when they go: +50 MB stayed before their
        # frames let go of their pages and the heap was trimmed; +20 MB measured since
        assert after - before < 40, (before, after)
        assert worst < 10.0  # generous: the machine may be loaded (measured 0.4-1.8 s)
        assert httpx.get(sb.url + "/_sandbox/ledger", timeout=60).json()["count"] == 50_000


@pytest.mark.slow
def test_half_sent_heads_stay_within_the_header_budget(descriptors: None) -> None:
    """4,000 connections each send 60 KB of a request head and stall: what does not fit the
    16 MiB header budget is answered 503 at once (before: +252 MB, 197 MB kept)."""
    with serve(nofile=9000) as sb:
        time.sleep(0.3)
        before = _rss_mb(sb.proc.pid)
        head = (f"GET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1:{sb.port}\r\n".encode()
                + b"".join(b"X-Pad-%02d: %s\r\n" % (i, b"p" * 1000) for i in range(60)))
        socks = []
        try:
            for _ in range(4000):
                sock = socket.socket()
                sock.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    sock.connect(("127.0.0.1", sb.port))
                socks.append(sock)
            time.sleep(0.5)
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(head)
            worst = _worst_health(sb.url, 2.0)
            during = _rss_mb(sb.proc.pid)
            answers = [b"(holding)"] * len(socks)
            # a connection the server has not reached yet holds no header bytes either: the
            # ones still without an answer are asked again until what they hold fits the
            # budget (a loaded machine's server reaches them later), or a deadline passes
            deadline = time.monotonic() + scaled(15)
            while time.monotonic() < deadline:
                for i, sock in enumerate(socks):
                    if answers[i] != b"(holding)":
                        continue
                    try:
                        answers[i] = sock.recv(200).split(b"\r\n", 1)[0]
                    except BlockingIOError:
                        pass
                    except OSError:
                        answers[i] = b"(reset)"
                if answers.count(b"(holding)") * 60 * 1024 <= DEFAULT_HEADER_BUDGET:
                    break
                time.sleep(0.5)
        finally:
            for sock in socks:
                sock.close()
        time.sleep(2.0)
        after = _rss_mb(sb.proc.pid)
        holding = answers.count(b"(holding)")
        refused = sum(a.startswith(b"HTTP/1.1 503") for a in answers)
        print(f"\n4,000 half-sent heads: RSS before {before:.1f} MB, while {during:.1f} MB, "
              f"after {after:.1f} MB; {holding} holding, {refused} answered 503; health worst "
              f"{worst * 1000:.0f} ms")
        assert refused > 3000, collections.Counter(answers).most_common(4)
        # the budget is held in memory terms (below); how many heads the server has not yet
        # reached when the test asks depends on the machine's load, not on the budget
        assert during - before < 120, (before, during)
        assert after - before < 120, (before, after)
        assert worst < 10.0  # generous: the machine may be loaded (measured 0.4-1.8 s)
