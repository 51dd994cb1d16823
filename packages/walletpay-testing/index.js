// walletpay-testing: the walletctl sandbox's browser-test driver for Node test runners.
// The driver (window.WalletPayTesting) is added to a page before it loads; each command it
// sends to the sandbox's payment sheet carries a one-time token that the TEST PROCESS gets
// from the sandbox's admin API (driverToken below); no page script can get one.
"use strict";

const path = require("path");

const DRIVER_PATH = path.join(__dirname, "walletpay-testing.js");
const DEFAULT_SANDBOX_URL = "http://127.0.0.1:8731";
// pay()'s answer comes back as a request the test's route takes (see the Playwright fixture)
const ANSWER_PATH = "/__walletpay-testing/answer";

/** The driver's source, to add to every page before it loads. */
function driverSource() {
  return require("./driver.js");
}

/** The sandbox's base URL: the argument, else $SANDBOX_URL, else http://127.0.0.1:8731. */
function sandboxUrl(url) {
  return String(url || process.env.SANDBOX_URL || DEFAULT_SANDBOX_URL).replace(/\/+$/, "");
}

/** A one-time driver token from the sandbox's admin API (POST /_sandbox/testing/token);
 *  adminToken: the sandbox's X-Sandbox-Token when it has one ($WALLETCTL_SANDBOX_TOKEN). */
async function driverToken(url, options = {}) {
  const base = sandboxUrl(url);
  const admin = options.adminToken || process.env.WALLETCTL_SANDBOX_TOKEN;
  let resp;
  try {
    resp = await fetch(base + "/_sandbox/testing/token", {
      method: "POST", headers: admin ? { "X-Sandbox-Token": admin } : {},
    });
  } catch (err) {
    throw new Error(`WalletPayTesting: token: cannot reach the sandbox at ${base} ` +
                    `(${err && err.cause ? err.cause.message : err}); is it running?`);
  }
  const text = await resp.text();
  if (!resp.ok) {
    throw new Error(`WalletPayTesting: token: the sandbox at ${base} refused ` +
                    `POST /_sandbox/testing/token (HTTP ${resp.status}: ${text.slice(0, 200)})`);
  }
  return JSON.parse(text).token;
}

module.exports = { ANSWER_PATH, DEFAULT_SANDBOX_URL, DRIVER_PATH, driverSource, driverToken,
                   sandboxUrl };
