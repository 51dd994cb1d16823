// Types of walletpay-testing (the walletctl sandbox's browser-test driver).

/** The sandbox's test cards (GET /wallet/cards): device tokens and PAN_ONLY cards. */
export type TestCard = "mc-token" | "visa-token" | "discover-token" | "visa-debit" |
  "visa-pan" | "amex-pan" | "jcb-pan" | "mc-prepaid" | "visa-decline" | (string & {});

export interface Address {
  name?: string; address1?: string; locality?: string; administrativeArea?: string;
  postalCode?: string; countryCode?: string; phoneNumber?: string;
}

export interface PayOptions {
  card?: TestCard;
  email?: string;
  billing?: Address;
  shipping?: Address;
  shippingOption?: string;
  offer?: string;
  /** CSS selector of the merchant's button (default: a visible button inside
   *  #merchant-wallet-button or [data-walletpay-container]). */
  button?: string;
  /** Open the sheet as startWalletPay() would, without the merchant's button. */
  openDirectly?: boolean;
  /** Bounds every wait of the call (default 20000). */
  timeoutMs?: number;
}

/** The event.detail the page's handlePaymentResult received. */
export interface PaymentResultDetail {
  clientSystemTransactionId: string;
  transactionAccountId: string;
  transactionMethod: "WalletPay";
  cryptogram?: string;
  eciIndicator?: string;
  email?: string;
  billingAddress?: Address;
  shippingAddress?: Address;
  [key: string]: unknown;
}

export interface SheetState {
  ready: boolean; open: boolean; done: boolean; cards: string[]; card: string | null;
  total: string | null; currencyCode: string | null; busy: boolean; blocked: boolean;
  error: { reason: string; message: string } | null; notice: string | null;
  shippingOptions: string[]; shippingOption: string | null; sections: string[];
}

export interface ChallengeAnswer {
  challengeId: string; outcome: "pass" | "fail"; amount: string | null;
}

/** Where the driver file is (for Playwright's addInitScript({path}) or Selenium's CDP). */
export const DRIVER_PATH: string;
export const DEFAULT_SANDBOX_URL: string;
export const ANSWER_PATH: string;
/** The driver's source, to add to every page before it loads. */
export function driverSource(): string;
/** The sandbox's base URL: url, else $SANDBOX_URL, else http://127.0.0.1:8731. */
export function sandboxUrl(url?: string): string;
/** A one-time driver token from the sandbox's admin API (POST /_sandbox/testing/token). */
export function driverToken(url?: string, options?: { adminToken?: string }): Promise<string>;

declare global {
  interface Window {
    WalletPayTesting: {
      pay(options: PayOptions & { token: string }): Promise<PaymentResultDetail>;
      cancel(options: { token: string; timeoutMs?: number }): Promise<string>;
      state(options: { token: string; timeoutMs?: number }): Promise<SheetState>;
      challenge(outcome: "pass" | "fail", timeoutMs?: number): Promise<ChallengeAnswer>;
      session(token: string): {
        pay(options?: PayOptions): Promise<PaymentResultDetail>;
        cancel(timeoutMs?: number): Promise<string>;
        state(timeoutMs?: number): Promise<SheetState>;
        ready(timeoutMs?: number): Promise<SheetState>;
        open(options?: PayOptions | number): Promise<SheetState>;
        chooseCard(id: TestCard, timeoutMs?: number): Promise<SheetState>;
        fill(sections: { email?: string; billing?: Address; shipping?: Address },
             timeoutMs?: number): Promise<SheetState>;
        chooseShippingOption(id: string, timeoutMs?: number): Promise<SheetState>;
        applyOffer(code: string, timeoutMs?: number): Promise<SheetState>;
        pressPay(timeoutMs?: number): Promise<PaymentResultDetail>;
      };
      events(): Array<{ type: string; detail: unknown }>;
      gateway(): string | null;
    };
  }
}
