import type { Page, TestType, PlaywrightTestArgs, PlaywrightTestOptions,
  PlaywrightWorkerArgs, PlaywrightWorkerOptions, Expect } from "@playwright/test";
import type { ChallengeAnswer, PayOptions, PaymentResultDetail, SheetState } from "./index";

export interface Wallet {
  /** Press the merchant's button, choose the card, fill, press Pay: the page's event.detail. */
  pay(options?: PayOptions): Promise<PaymentResultDetail>;
  /** Cancel the open sheet: the CANCELED message. */
  cancel(options?: { timeoutMs?: number }): Promise<string>;
  state(): Promise<SheetState>;
  /** Wait for the sandbox's 3-D Secure page, then pass or fail it. */
  challenge(outcome?: "pass" | "fail", options?: { timeoutMs?: number }): Promise<ChallengeAnswer>;
  /** A fresh one-time driver token. */
  token(): Promise<string>;
}

export interface WalletOptions {
  /** The sandbox's base URL (default $SANDBOX_URL, else http://127.0.0.1:8731). */
  sandboxUrl: string | undefined;
  /** The sandbox's admin token (X-Sandbox-Token), when it has one. */
  sandboxAdminToken: string | undefined;
}

export const test: TestType<PlaywrightTestArgs & PlaywrightTestOptions & WalletOptions &
  { wallet: Wallet }, PlaywrightWorkerArgs & PlaywrightWorkerOptions>;
export const expect: Expect;
export function walletFor(page: Page, sandboxUrl: string, adminToken?: string): Wallet;
