"""A merchant's own site on ANOTHER origin than the gateway (the cross-origin integration).

``MerchantSite(gateway_url)`` serves, on ``http://localhost:<port>`` (the sandbox is on
``http://127.0.0.1:<port>``, so the browser sees two origins):

* ``GET /checkout?ref=...&amount=...``: the checkout page. It loads
  ``<gateway>/walletpay.js`` and calls ``runWalletPay`` with the public API key this merchant's
  server got from the public key service (``POST /api/v5/publicKeys``, server to server).
* any path of :attr:`pages` (tests add their own pages; ``__GATEWAY__`` and ``__KEY__`` in the
  HTML become the gateway URL and the public API key; :attr:`headers` adds response headers
  to a path, e.g. a Content-Security-Policy).
* ``POST /result``: the page posts ``event.detail`` here (same origin as the page). The
  server keeps it in :attr:`results` (the cryptogram stays on this server).
"""

from __future__ import annotations

import base64
import html
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Merchant checkout</title>
  <link rel="icon" href="data:,">
  <script src="{gateway}/walletpay.js"></script>
</head>
<body>
<main>
  <h1>Checkout</h1>
  <div id="merchant-wallet-button" hidden>
    <button type="button" id="merchant-pay-button">Pay with WalletPay</button>
  </div>
  <p id="status" role="status">Loading…</p>
</main>
<script>
  const order = {config};
  window.events = [];
  function handleWalletPayReady() {{
    window.events.push(["ready", null]);
    document.getElementById("merchant-wallet-button").hidden = false;
  }}
  function handlePaymentResult(event) {{
    window.events.push(["result", event.detail.transactionAccountId || event.detail.code]);
    fetch("/result", {{method: "POST", headers: {{"Content-Type": "application/json"}},
                      body: JSON.stringify(event.detail)}})
      .then((r) => r.json())
      .then((r) => {{ document.getElementById("status").textContent = "stored " + r.stored; }});
  }}
  function handlePaymentError(event) {{
    window.events.push(["error", event.detail]);
    document.getElementById("status").textContent = "Error: " + event.detail;
  }}
  runWalletPay(order.mid, order.sid, order.ref, ["PAN_ONLY", "CRYPTOGRAM_3DS"],
               ["AMEX", "DISCOVER", "JCB", "MASTERCARD", "VISA"], "DE", "EUR", "FINAL",
               order.amount, "test", order.publicKeyApi, false, "", "Cross-origin shop",
               order.optionalParams);
</script>
</body>
</html>
"""


class MerchantSite:
    def __init__(self, gateway_url: str, merchant_id: str = "M-1001", store_id: str = "S-01",
                 service_secret: str = "sandbox-secret") -> None:  # noqa: S107
        self.gateway = gateway_url
        basic = base64.b64encode(f"shop-server:{service_secret}".encode()).decode()
        resp = httpx.post(f"{gateway_url}/api/v5/publicKeys",
                          json={"merchantId": merchant_id, "storeId": store_id},
                          headers={"Authorization": f"Basic {basic}"})
        resp.raise_for_status()
        self.keys: dict[str, Any] = resp.json()
        self.merchant_id, self.store_id = merchant_id, store_id
        self.results: list[dict[str, Any]] = []
        self.public_key_override: str | None = None
        # extra pages: path -> HTML with __GATEWAY__ and __KEY__ placeholders
        self.pages: dict[str, str] = {}
        self.headers: dict[str, dict[str, str]] = {}  # path -> extra response headers
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                for name, value in site.headers.get(urlsplit(self.path).path, {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path in site.pages:
                    text = site.pages[url.path].replace("__GATEWAY__", site.gateway)
                    text = text.replace("__KEY__", site.keys["apiKey"])
                    self._send(200, text.encode(), "text/html; charset=utf-8")
                    return
                if url.path != "/checkout":
                    self._send(404, b"not found", "text/plain")
                    return
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                config = {"mid": q.get("mid", site.merchant_id), "sid": site.store_id,
                          "ref": q.get("ref", "xo-1"), "amount": q.get("amount", "12.34"),
                          "publicKeyApi": site.public_key_override or site.keys["apiKey"],
                          "optionalParams": {"emailRequired": True}}
                text = PAGE.format(gateway=html.escape(site.gateway),
                                   config=json.dumps(config).replace("</", "<\\/"))
                self._send(200, text.encode(), "text/html; charset=utf-8")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                detail = json.loads(self.rfile.read(length) or b"null")
                site.results.append(detail)
                self._send(200, json.dumps({"stored": len(site.results)}).encode(),
                           "application/json")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> MerchantSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
