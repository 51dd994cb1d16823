// Playwright Test: the shop (node server.js) against the walletctl sandbox at SANDBOX_URL,
// started here with `walletctl sandbox serve` unless SANDBOX_URL names a running one.
const { defineConfig } = require("@playwright/test");

const SHOP_PORT = process.env.PORT || "8000";
const SANDBOX_URL = process.env.SANDBOX_URL || "http://127.0.0.1:8731";
const servers = [{
  command: "node server.js",
  url: `http://127.0.0.1:${SHOP_PORT}/checkout`,
  env: { SANDBOX_URL, PORT: SHOP_PORT },
}];
if (!process.env.SANDBOX_URL) {
  servers.push({ command: "walletctl sandbox serve --port 8731",
                 url: `${SANDBOX_URL}/_sandbox/health` });
}

module.exports = defineConfig({
  testDir: "tests",
  workers: 1,
  webServer: servers,
  use: {
    baseURL: `http://127.0.0.1:${SHOP_PORT}`,
    sandboxUrl: SANDBOX_URL, // the walletpay-testing fixture's sandbox
    // Debian's chromium (or CHROMIUM); `npx playwright install chromium` also works
    launchOptions: { executablePath: process.env.CHROMIUM || "/usr/bin/chromium" },
  },
});
