// Playwright Test fixture: `wallet` adds the driver to the test's context and gets a fresh
// one-time token for each call. Options (test.use / config `use`): sandboxUrl
// ($SANDBOX_URL), sandboxAdminToken ($WALLETCTL_SANDBOX_TOKEN).
//
//   const { test, expect } = require("walletpay-testing/playwright");
//   test("pays", async ({ page, wallet }) => {
//     await page.goto("/checkout");
//     const detail = await wallet.pay({ card: "mc-token" });
//   });
"use strict";

const { test: base, expect } = require("@playwright/test");
const { ANSWER_PATH, driverSource, driverToken, sandboxUrl } = require("./index.js");

const CHALLENGE_PATH = /\/pay\/3ds\/ch_[0-9a-f]+$/;

function walletFor(page, url, adminToken) {
  const token = () => driverToken(url, { adminToken });
  let answers = null;

  async function pay(options = {}) {
    // the answer is a keepalive request this route takes, sent by the driver (its answer
    // option) before the page's handler runs: an evaluate's value, or a request made after
    // the page started to navigate, would be lost by a shop that leaves at once
    if (!answers) {
      answers = [];
      await page.route("**" + ANSWER_PATH, async (route) => {
        answers.push(JSON.parse(route.request().postData() || "{}"));
        await route.fulfill({ status: 204, headers: { "Access-Control-Allow-Origin": "*" } });
      });
    }
    answers.length = 0;
    const limit = (options.timeoutMs || 20000) + 5000;
    await page.evaluate(([t, o, answerPath]) => {
      const say = (ok, value) => fetch(WalletPayTesting.gateway() + answerPath, {
        method: "POST", keepalive: true, body: JSON.stringify({ ok, value }),
      }).catch(() => {});
      WalletPayTesting.pay(Object.assign({}, o, { token: t, answer: say })).catch(() => {});
    }, [await token(), options, ANSWER_PATH]);
    const giveUp = Date.now() + limit;
    while (!answers.length) {
      if (Date.now() > giveUp) {
        throw new Error(`WalletPayTesting: pay: no answer from the page in ${limit} ms ` +
                        `(the page is at ${page.url()})`);
      }
      await page.waitForTimeout(20);
    }
    if (!answers[0].ok) throw new Error(answers[0].value);
    return answers[0].value;
  }

  return {
    pay,
    async cancel(options = {}) {
      const t = await token();
      return page.evaluate(([t, o]) => WalletPayTesting.cancel(Object.assign({}, o, { token: t })),
                           [t, options]);
    },
    async state() {
      const t = await token();
      return page.evaluate((t) => WalletPayTesting.state({ token: t }), t);
    },
    async challenge(outcome = "pass", { timeoutMs = 20000 } = {}) {
      try {
        await page.waitForURL(CHALLENGE_PATH, { timeout: timeoutMs });
      } catch (err) {
        throw new Error(`WalletPayTesting: 3-D Secure: the page did not reach the sandbox's ` +
                        `3-D Secure page (/pay/3ds/...) within ${timeoutMs} ms; it is at ` +
                        `${page.url()} (did the payment need 3-D Secure, and does the shop ` +
                        `send the payer to its challengeUrl?)`);
      }
      return page.evaluate(([o, t]) => WalletPayTesting.challenge(o, t), [outcome, timeoutMs]);
    },
    token,
  };
}

const test = base.extend({
  sandboxUrl: [undefined, { option: true }],
  sandboxAdminToken: [undefined, { option: true }],
  wallet: async ({ page, context, sandboxUrl: url, sandboxAdminToken }, use) => {
    await context.addInitScript({ content: driverSource() });
    await use(walletFor(page, sandboxUrl(url), sandboxAdminToken));
  },
});

module.exports = { test, expect, walletFor };
