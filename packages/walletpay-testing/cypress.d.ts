/// <reference types="cypress" />
import type { ChallengeAnswer, PayOptions, PaymentResultDetail, SheetState } from "./index";

declare global {
  namespace Cypress {
    interface Chainable {
      /** Press the merchant's button, choose the card, fill, press Pay: the page's event.detail. */
      walletPay(options?: PayOptions): Chainable<PaymentResultDetail>;
      /** Cancel the open sheet: the CANCELED message. */
      walletCancel(options?: { timeoutMs?: number }): Chainable<string>;
      walletState(): Chainable<SheetState>;
      /** On the sandbox's 3-D Secure page: pass or fail it. */
      walletChallenge(outcome?: "pass" | "fail",
                      options?: { timeoutMs?: number }): Chainable<ChallengeAnswer>;
    }
  }
}
export {};
