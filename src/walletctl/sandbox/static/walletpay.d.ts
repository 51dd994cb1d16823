/**
 * walletpay.d.ts: TypeScript declaration of the browser wallet client script (walletpay.js),
 * served by the walletctl sandbox at /walletpay.d.ts next to /walletpay.js.
 *
 *   /// <reference path="./walletpay.d.ts" />
 *   const detail = await runWalletPay("M-1001", "S-01", "order-1001",
 *     ["PAN_ONLY", "CRYPTOGRAM_3DS"], ["VISA"], "DE", "EUR", "FINAL", "12.34", "test",
 *     apiKey, false, "", "My shop", { emailRequired: true });
 */

type CardNetwork = "AMEX" | "DISCOVER" | "JCB" | "MASTERCARD" | "VISA";
type AuthMethod = "PAN_ONLY" | "CRYPTOGRAM_3DS";
type CallbackIntent = "OFFER" | "PAYMENT_AUTHORIZATION" | "SHIPPING_ADDRESS" | "SHIPPING_OPTION";
type ErrorReason = "OFFER_INVALID" | "PAYMENT_DATA_INVALID" | "SHIPPING_ADDRESS_INVALID" |
  "SHIPPING_ADDRESS_UNSERVICEABLE" | "SHIPPING_OPTION_INVALID" | "OTHER_ERROR";
type ButtonLocale = "en" | "ar" | "bg" | "ca" | "cs" | "da" | "de" | "el" | "es" | "et" | "fi" |
  "fr" | "hr" | "id" | "it" | "ja" | "ko" | "ms" | "nl" | "no" | "pl" | "pt" | "ru" | "sk" |
  "sl" | "sr" | "sv" | "th" | "tr" | "uk" | "zh";

/** Why a runWalletPay / startWalletPay Promise was rejected. */
type WalletPayErrorCode =
  | "DEVELOPER_ERROR"    // a bad argument (thrown synchronously by runWalletPay) or misuse
  | "CANCELED"           // the payer closed the sheet (Cancel or Escape), or the page removed it
  | "IN_PROGRESS"        // runWalletPay while the open sheet is paying: refused at once
  | "GATEWAY_ERROR"      // the gateway refused the key, the token or the payment account
  | "NETWORK"            // the gateway could not be reached / the connection was lost
  | "WALLET_UNAVAILABLE" // no wallet, or no usable card with existingPaymentMethodRequired
  | "SUPERSEDED";        // a newer runWalletPay call replaced this one (and its open sheet)

interface WalletPayError extends Error {
  name: "WalletPayError";
  code: WalletPayErrorCode;
  /** Bad arguments only: the parameter, e.g. "optionalParams.callbackIntents[0]". */
  parameter?: string;
  /** Bad arguments only: the rule broken, e.g. "must be FINAL". */
  rule?: string;
  /** GATEWAY_ERROR from a payment account refusal: the gateway's error object. */
  detail?: GatewayErrorDetail;
}

interface Address {
  name?: string; address1?: string; address2?: string; address3?: string;
  locality?: string; administrativeArea?: string; sortingCode?: string;
  /** ISO 3166-1 alpha-2 */
  countryCode?: string; postalCode?: string; phoneNumber?: string;
}

interface DisplayItem {
  label: string;
  type: "LINE_ITEM" | "SUBTOTAL";
  /** A decimal string in the payment's currency (its ISO 4217 minor digits at most); may be negative. */
  price: string;
  status?: "FINAL" | "PENDING";
}

interface SelectionOption { id: string; label: string; description?: string }
interface ShippingOptionParameters {
  defaultSelectedOptionId?: string;
  shippingOptions: SelectionOption[];
}
interface OfferDetail { redemptionCode: string; description: string }
interface OfferInfo { offers: OfferDetail[] }

interface PaymentDataError {
  reason: ErrorReason;
  message: string;
  /** One of the callbackIntents registered at the start. */
  intent: CallbackIntent;
}

interface IntermediatePaymentData {
  callbackTrigger?: "INITIALIZE" | "SHIPPING_ADDRESS" | "SHIPPING_OPTION" | "OFFER";
  shippingAddress?: Address;
  shippingOptionData?: { id: string };
  offerData?: { redemptionCode: string; redemptionCodes: string[] };
}

interface PaymentDataRequestUpdate {
  newTransactionInfo?: {
    totalPrice: string;
    totalPriceStatus?: "FINAL";
    totalPriceLabel?: string;
    /** Must stay the payment's currencyCode. */
    currencyCode?: string;
    countryCode?: string;
    displayItems?: DisplayItem[];
    checkoutOption?: "DEFAULT" | "COMPLETE_IMMEDIATE_PURCHASE";
  };
  newShippingOptionParameters?: ShippingOptionParameters;
  newOfferInfo?: OfferInfo;
  error?: PaymentDataError;
}

interface PaymentAuthorizationResult {
  transactionState: "SUCCESS" | "ERROR";
  error?: PaymentDataError;
}

/** What onPaymentAuthorized receives: the wallet's PaymentData merged with the gateway result. */
interface PaymentData extends Partial<PaymentResultDetail> {
  apiVersion: number;
  apiVersionMinor: number;
  paymentMethodData: {
    type: string;
    description: string;
    info: { cardNetwork?: string; cardDetails?: string; billingAddress?: Address; [k: string]: unknown };
    tokenizationData: { type: string; token: string };
  };
  email?: string;
  shippingAddress?: Address;
  shippingOptionData?: { id: string };
}

interface WalletPayOptionalParams {
  existingPaymentMethodRequired?: boolean;
  emailRequired?: boolean;
  billingAddressRequired?: boolean;
  billingAddressParameters?: { format?: "MIN" | "FULL"; phoneNumberRequired?: boolean };
  callbackIntents?: CallbackIntent[];
  shippingAddressRequired?: boolean;
  shippingAddressParameters?: { allowedCountryCodes?: string[]; phoneNumberRequired?: boolean };
  shippingOptionRequired?: boolean;
  shippingOptionParameters?: ShippingOptionParameters;
  additionalTransactionInfo?: {
    displayItems?: DisplayItem[];
    totalPriceLabel?: string;
    checkoutOption?: "DEFAULT" | "COMPLETE_IMMEDIATE_PURCHASE";
  };
  /** false: the sheet hides prepaid cards (the sandbox's mc-prepaid). Default true. */
  allowPrepaidCards?: boolean;
  /** false: the sheet hides credit cards (debit and prepaid stay). Default true. */
  allowCreditCards?: boolean;
  offerInfo?: OfferInfo[];
  buttonColor?: "default" | "black" | "white";
  buttonLocale?: ButtonLocale;
  buttonSizeMode?: "static" | "fill";
  buttonType?: "book" | "buy" | "checkout" | "donate" | "order" | "pay" | "plain" | "subscribe" |
    "long" | "short";
  /** Must settle within the callback timeout (WalletPay.configure), else the sheet shows an error. */
  onPaymentDataChanged?: (data: IntermediatePaymentData) =>
    PaymentDataRequestUpdate | Promise<PaymentDataRequestUpdate>;
  onPaymentAuthorized?: (data: PaymentData) =>
    PaymentAuthorizationResult | Promise<PaymentAuthorizationResult>;
}

/** handlePaymentResult's event.detail on success; what the runWalletPay Promise resolves with. */
interface PaymentResultDetail {
  clientSystemTransactionId: string;
  transactionAccountId: string;
  transactionMethod: "WalletPay";
  /** Device-token (CRYPTOGRAM_3DS) credentials only: keep on your server. */
  cryptogram?: string;
  eciIndicator?: string;
  email?: string;
  billingAddress?: Address;
  shippingAddress?: Address;
}

/** handlePaymentResult's event.detail when the gateway refused (spec 2.8). */
interface GatewayErrorDetail {
  code: string;
  description?: string;
  details?: { message?: string };
}

/**
 * Prepares a payment (spec 2.6). Throws a WalletPayError (code DEVELOPER_ERROR) synchronously
 * on a bad argument, and on a 16th argument (there are 15). Returns a Promise resolved with the success detail, or rejected with a
 * WalletPayError; it settles at the call's first outcome (later ones reach the events only).
 *
 * @param clientSystemTransactionId 1-64 printable characters (code points), no tabs, line
 *   breaks or control characters, not starting or ending with a space.
 * @param amount A decimal string like "123.45" with at most the currency's ISO 4217 minor
 *   digits ("1234" for JPY, "12.345" for KWD).
 */
declare function runWalletPay(
  mid: string,
  sid: string,
  clientSystemTransactionId: string,
  allowedMethods: AuthMethod[],
  allowedCardNetworks: CardNetwork[],
  countryCode: string,
  currencyCode: string,
  amountStatus: "FINAL",
  amount: string,
  profile: "test" | "prod",
  publicKeyApi: string,
  useWalletPayButton: boolean,
  merchantNo?: string | null,
  merchantName?: string | null,
  optionalParams?: WalletPayOptionalParams | null,
): Promise<PaymentResultDetail>;

/** Opens the sheet (after handleWalletPayReady); the Promise settles with this sheet's outcome. */
declare function startWalletPay(): Promise<PaymentResultDetail>;

declare const WalletPay: {
  runWalletPay: typeof runWalletPay;
  start: typeof startWalletPay;
  /** Clicking `element` (or anything inside it) opens the sheet; returns `element`. */
  attachButton<T extends Element>(element: T): T;
  /** callbackTimeoutMs: 1000 to 120000 (default 20000). Returns the settings now in force. */
  configure(options: { callbackTimeoutMs?: number }): { callbackTimeoutMs: number };
  WalletPayError: { prototype: WalletPayError };
  /** "2.0" */
  version: string;
  /** The gateway origin the script was loaded from. */
  gateway: string;
};

interface DocumentEventMap {
  handleWalletPayReady: CustomEvent<null>;
  handlePaymentResult: CustomEvent<PaymentResultDetail | GatewayErrorDetail>;
  handlePaymentError: CustomEvent<string>;
}

interface Window {
  handleWalletPayReady?: (event: CustomEvent<null>) => void;
  handlePaymentResult?: (event: CustomEvent<PaymentResultDetail | GatewayErrorDetail>) => void;
  handlePaymentError?: (event: CustomEvent<string>) => void;
}
