"""No request costs more than its size: against a real ``walletctl sandbox serve``
subprocess, each number that used to stall the server (``1e999999999`` in every integer
field, fault settings in the header and the admin route, the clock, amounts, a query) is
refused at once while a second client polls ``/_sandbox/health``; integer fields take JSON
integers only; credentials come before queries; the seed route reads keys like every route;
one type for ``transactionAmount``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS, MERCHANT_ID, STORE_ID, make_checkout_body
from timescale import scaled

from .test_connections import Served, serve

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
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    status = client.get(self.url + "/_sandbox/health").status_code
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))
                    continue
                self.latencies.append(time.perf_counter() - start)
                if status != 200:
                    self.errors.append(f"status {status}")
                time.sleep(0.005)

    def __enter__(self) -> HealthPoller:
        self._thread.start()
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
