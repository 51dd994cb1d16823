// The shop's checkout, paid in Chromium through the sandbox's sheet. The `wallet` fixture of
// the walletpay-testing package adds the sandbox's test driver to every page and gets a
// one-time token from the sandbox for each call.
const { test, expect } = require("walletpay-testing/playwright");

test("pays with a device token", async ({ page, wallet }) => {
  await page.goto("/checkout");
  const detail = await wallet.pay({ card: "mc-token" }); // presses the shop's own button
  expect(detail.cryptogram).toBeTruthy(); // the event.detail the page received
  await expect(page.locator("#result")).toHaveText("Payment Approved");
});

test("pays with a PAN_ONLY card through 3-D Secure", async ({ page, wallet }) => {
  await page.goto("/checkout");
  const detail = await wallet.pay({ card: "visa-pan" });
  expect(detail.cryptogram).toBeUndefined();
  const answer = await wallet.challenge("pass"); // the shopper's 3-D Secure page
  expect(answer.amount).toBe("12.34 EUR");
  await expect(page.locator("#result")).toHaveText("Payment Approved");
});

test("a failed 3-D Secure check is declined", async ({ page, wallet }) => {
  await page.goto("/checkout");
  await wallet.pay({ card: "visa-pan" });
  await wallet.challenge("fail");
  await expect(page.locator("#result")).toHaveText("Payment Declined");
});
