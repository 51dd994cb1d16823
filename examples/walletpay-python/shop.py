"""A complete merchant site for the browser wallet: one checkout page and the shop's server.

The page gets only the page key; the server keeps the encryption key id, reads the payment
account, sends PAN_ONLY cards through the sandbox's hosted 3-D Secure check and authorizes
with its own server key. Run it: SANDBOX_URL=http://127.0.0.1:8731 python shop.py 8000
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

MERCHANT, STORE, AMOUNT, CURRENCY = "M-1001", "S-01", "12.34", "EUR"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<script src="SANDBOX/walletpay.js"></script></head>
<body><main><h1>Checkout: 12.34 EUR</h1>
<div id="merchant-wallet-button" hidden><button type="button">Pay with WalletPay</button></div>
<p id="result" role="status"></p></main>
<script>
  async function handlePaymentResult(event) {
    const resp = await fetch("/api/pay", {method: "POST", body: JSON.stringify(event.detail)});
    const answer = await resp.json();
    if (answer.challengeUrl) location.assign(answer.challengeUrl);  // 3-D Secure, then back
    else document.getElementById("result").textContent = "Payment " + answer.state;
  }
  function handleWalletPayReady() {
    document.getElementById("merchant-wallet-button").hidden = false;
  }
  fetch("/api/session").then((r) => r.json()).then((s) => runWalletPay(
    "M-1001", "S-01", s.reference, ["PAN_ONLY", "CRYPTOGRAM_3DS"],
    ["MASTERCARD", "VISA"], "DE", "EUR", "FINAL", "12.34", "test", s.apiKey, false, "",
    "Example shop", {}));
</script></body></html>
"""


class Shop:
    """The shop's server side: orders by reference, and its calls to the gateway."""

    def __init__(self, sandbox_url: str, server_key: str, service_secret: str) -> None:
        self.gateway = httpx.Client(base_url=sandbox_url, timeout=10.0)
        self.sandbox_url = sandbox_url
        self.server_auth = {"Authorization": f"PublicApiKey {server_key}"}
        self.service = ("shop-server", service_secret)
        self.orders: dict[str, dict[str, Any]] = {}
        self.base_url = ""  # set once the shop listens

    def session(self) -> dict[str, str]:
        keys = self.gateway.post("/api/v5/publicKeys", auth=self.service,
                                 json={"merchantId": MERCHANT, "storeId": STORE}).json()
        reference = "order-" + secrets.token_hex(4)
        self.orders[reference] = {"encryptionKeyId": keys["encryptionKeyId"]}
        return {"reference": reference, "apiKey": keys["apiKey"]}  # never the key id

    def pay(self, detail: dict[str, Any]) -> dict[str, Any]:
        reference = detail["clientSystemTransactionId"]
        order = self.orders[reference]
        order["account"] = detail["transactionAccountId"]
        account = self.gateway.get(
            f"/api/v5/paymentAccounts/{order['account']}", headers=self.server_auth,
            params={"merchantId": MERCHANT, "storeId": STORE,
                    "encryptionKeyId": order["encryptionKeyId"]}).json()
        if account["cardType"] == "Token":  # a device token: its cryptogram authorizes
            return self.authorize(reference, cryptogram=detail["cryptogram"],
                                  eciIndicator=detail["eciIndicator"])
        challenge = self.gateway.post("/api/v5/threeDSecure", headers=self.server_auth, json={
            "merchantId": MERCHANT, "storeId": STORE, "transactionAccountId": order["account"],
            "amount": "1234", "currencyCode": CURRENCY, "clientSystemTransactionId": reference,
            "returnUrl": f"{self.base_url}/3ds-done?order={reference}",
            "merchantName": "Example shop"}).json()  # shown on the 3-D Secure page
        return {"challengeUrl": challenge["challengeUrl"]}

    def three_ds_done(self, reference: str, challenge_id: str) -> dict[str, Any]:
        result = self.gateway.get(f"/api/v5/threeDSecure/{challenge_id}",
                                  headers=self.server_auth,
                                  params={"merchantId": MERCHANT, "storeId": STORE}).json()
        if result.get("status") != "completed":
            return {"state": "not authenticated"}
        return self.authorize(reference, threeDSecure=result["threeDSecure"])

    def authorize(self, reference: str, **credential: Any) -> dict[str, Any]:
        order = self.orders[reference]
        resp = self.gateway.post("/api/v5/transactions", headers=self.server_auth, json={
            "merchantId": MERCHANT, "storeId": STORE, "userId": "shop-server",
            "type": "ecom.sale", "amount": "1234", "currencyCode": CURRENCY,
            "clientSystemTransactionId": reference, "transactionAccountId": order["account"],
            "encryptionKeyId": order["encryptionKeyId"], **credential})
        return {"state": resp.json().get("state", f"refused ({resp.status_code})")}


def make_handler(shop: Shop) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def send(self, status: int, body: str, kind: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/checkout":
                self.send(200, PAGE.replace("SANDBOX", shop.sandbox_url), "text/html")
            elif url.path == "/api/session":
                self.send(200, json.dumps(shop.session()), "application/json")
            elif url.path == "/3ds-done":
                state = shop.three_ds_done(query["order"], query["challengeId"])["state"]
                self.send(200, f'<!doctype html><html lang="en"><title>Done</title><main>'
                               f'<p id="result">Payment {state}</p></main></html>', "text/html")
            else:
                self.send(404, "not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send(200, json.dumps(shop.pay(body)), "application/json")

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def serve(shop: Shop, port: int = 0) -> ThreadingHTTPServer:
    """Start the shop on 127.0.0.1:``port`` (0: a free one) in a background thread."""
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(shop))
    shop.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    running = serve(Shop(os.environ.get("SANDBOX_URL", "http://127.0.0.1:8731"),
                         os.environ.get("SERVER_KEY", "sandbox-api-key"),
                         os.environ.get("SERVICE_SECRET", "sandbox-secret")),
                    int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
    print(f"shop on {running.server_address}; Ctrl-C to stop")
    threading.Event().wait()
