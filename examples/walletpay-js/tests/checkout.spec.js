// The shop's checkout, paid in Chromium through the sandbox's sheet. The sandbox's test
// driver (/walletpay-testing.js, window.WalletPayTesting) is added to every page first.
const { test, expect } = require("@playwright/test");

const SANDBOX_URL = process.env.SANDBOX_URL || "http://127.0.0.1:8731";

test.beforeEach(async ({ context }) => {
  const driver = await (await fetch(`${SANDBOX_URL}/walletpay-testing.js`)).text();
  await context.addInitScript({ content: driver });
});

test("pays with a device token", async ({ page }) => {
  await page.goto("/checkout");
  const detail = await page.evaluate(() => WalletPayTesting.pay({ card: "mc-token" }));
  expect(detail.cryptogram).toBeTruthy(); // the event.detail the page received
  await expect(page.locator("#result")).toHaveText("Payment Approved");
});

test("pays with a PAN_ONLY card through 3-D Secure", async ({ page }) => {
  await page.goto("/checkout");
  const detail = await page.evaluate(() => WalletPayTesting.pay({ card: "visa-pan" }));
  expect(detail.cryptogram).toBeUndefined();
  await page.waitForURL("**/pay/3ds/**"); // the shopper's 3-D Secure page
  const answer = await page.evaluate(() => WalletPayTesting.challenge("pass"));
  expect(answer.amount).toBe("12.34 EUR");
  await expect(page.locator("#result")).toHaveText("Payment Approved");
});

test("a failed 3-D Secure check is declined", async ({ page }) => {
  await page.goto("/checkout");
  await page.evaluate(() => WalletPayTesting.pay({ card: "visa-pan" }));
  await page.waitForURL("**/pay/3ds/**");
  await page.evaluate(() => WalletPayTesting.challenge("fail"));
  await expect(page.locator("#result")).toHaveText("Payment Declined");
});
