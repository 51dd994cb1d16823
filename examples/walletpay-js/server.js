// A complete merchant site for the browser wallet: one checkout page and the shop's server.
// The page gets only the page key; the server keeps the encryption key id, reads the payment
// account, sends PAN_ONLY cards through the sandbox's hosted 3-D Secure check and authorizes
// with its own server key. Run it: SANDBOX_URL=http://127.0.0.1:8731 PORT=8000 node server.js
const http = require("node:http");
const crypto = require("node:crypto");

const SANDBOX = process.env.SANDBOX_URL || "http://127.0.0.1:8731";
const SERVER_KEY = process.env.SERVER_KEY || "sandbox-api-key";
const SERVICE_SECRET = process.env.SERVICE_SECRET || "sandbox-secret";
const PORT = Number(process.env.PORT || 8000);
const BASE = `http://127.0.0.1:${PORT}`;
const IDS = { merchantId: "M-1001", storeId: "S-01" };
const orders = new Map(); // reference -> {encryptionKeyId, account}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<script src="${SANDBOX}/walletpay.js"></script></head>
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
</script></body></html>`;

async function gateway(method, path, { body, query, auth } = {}) {
  const url = new URL(path, SANDBOX);
  for (const [k, v] of Object.entries(query || {})) url.searchParams.set(k, v);
  const resp = await fetch(url, {
    method, body: body && JSON.stringify(body),
    headers: { "Content-Type": "application/json",
               Authorization: auth || `PublicApiKey ${SERVER_KEY}` },
  });
  return { status: resp.status, data: await resp.json() };
}

async function session() {
  const basic = Buffer.from(`shop-server:${SERVICE_SECRET}`).toString("base64");
  const keys = (await gateway("POST", "/api/v5/publicKeys", { body: IDS,
                                                              auth: `Basic ${basic}` })).data;
  const reference = "order-" + crypto.randomBytes(4).toString("hex");
  orders.set(reference, { encryptionKeyId: keys.encryptionKeyId });
  return { reference, apiKey: keys.apiKey }; // never the key id
}

async function authorize(reference, credential) {
  const order = orders.get(reference);
  const { status, data } = await gateway("POST", "/api/v5/transactions", { body: {
    ...IDS, userId: "shop-server", type: "ecom.sale", amount: "1234", currencyCode: "EUR",
    clientSystemTransactionId: reference, transactionAccountId: order.account,
    encryptionKeyId: order.encryptionKeyId, ...credential } });
  return { state: data.state || `refused (${status})` };
}

async function pay(detail) {
  const reference = detail.clientSystemTransactionId;
  const order = orders.get(reference);
  order.account = detail.transactionAccountId;
  const account = (await gateway("GET", `/api/v5/paymentAccounts/${order.account}`, {
    query: { ...IDS, encryptionKeyId: order.encryptionKeyId } })).data;
  if (account.cardType === "Token") { // a device token: its cryptogram authorizes
    return authorize(reference, { cryptogram: detail.cryptogram,
                                  eciIndicator: detail.eciIndicator });
  }
  const challenge = (await gateway("POST", "/api/v5/threeDSecure", { body: {
    ...IDS, transactionAccountId: order.account, amount: "1234", currencyCode: "EUR",
    clientSystemTransactionId: reference,
    returnUrl: `${BASE}/3ds-done?order=${reference}`,
    merchantName: "Example shop" } })).data; // shown on the 3-D Secure page
  return { challengeUrl: challenge.challengeUrl };
}

async function threeDSDone(reference, challengeId) {
  const result = (await gateway("GET", `/api/v5/threeDSecure/${challengeId}`,
                                { query: IDS })).data;
  if (result.status !== "completed") return { state: "not authenticated" };
  return authorize(reference, { threeDSecure: result.threeDSecure });
}

http.createServer(async (req, res) => {
  const url = new URL(req.url, BASE);
  const send = (status, body, type) => {
    res.writeHead(status, { "Content-Type": type });
    res.end(body);
  };
  if (req.method === "GET" && url.pathname === "/checkout") {
    send(200, PAGE, "text/html");
  } else if (req.method === "GET" && url.pathname === "/api/session") {
    send(200, JSON.stringify(await session()), "application/json");
  } else if (req.method === "POST" && url.pathname === "/api/pay") {
    let text = "";
    for await (const chunk of req) text += chunk;
    send(200, JSON.stringify(await pay(JSON.parse(text))), "application/json");
  } else if (req.method === "GET" && url.pathname === "/3ds-done") {
    const { state } = await threeDSDone(url.searchParams.get("order"),
                                        url.searchParams.get("challengeId"));
    send(200, `<!doctype html><html lang="en"><title>Done</title><main>` +
              `<p id="result">Payment ${state}</p></main></html>`, "text/html");
  } else {
    send(404, "not found", "text/plain");
  }
}).listen(PORT, "127.0.0.1");
