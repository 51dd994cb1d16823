/*
 * walletpay.js: the browser wallet client script served by the walletctl sandbox.
 *
 * Plain JavaScript (ES2018), no build step, no third-party code, no network access
 * except to the origin this script was loaded from (the gateway). The source is split into
 * static/walletpay/NN-*.js (one closure); the sandbox serves their concatenation.
 *
 *   runWalletPay(mid, sid, clientSystemTransactionId, allowedMethods, allowedCardNetworks,
 *                countryCode, currencyCode, amountStatus, amount, profile, publicKeyApi,
 *                useWalletPayButton, merchantNo, merchantName, optionalParams) -> Promise
 *
 * Invalid arguments: runWalletPay THROWS a WalletPayError synchronously (name "WalletPayError",
 * code "DEVELOPER_ERROR", properties .parameter and .rule) AND raises handlePaymentError with
 * the same message:
 *     "runWalletPay: <parameter>: <rule>"   e.g. "runWalletPay: amountStatus: must be FINAL"
 * Values are echoed only when they are short and cannot be a key.
 *
 * Otherwise it returns a Promise: resolved with the success event.detail, or rejected with a
 * WalletPayError whose .code is CANCELED, GATEWAY_ERROR, NETWORK, WALLET_UNAVAILABLE,
 * SUPERSEDED or IN_PROGRESS; it settles at the first outcome (later ones reach the events
 * only). A newer call replaces an open sheet (it reopens with the new total and reference),
 * unless that sheet is paying: then the newer call is refused at once (IN_PROGRESS). A page
 * that removes <walletpay-host> while the sheet is open cancels it (CANCELED).
 *
 * Events (spec section 6). Each one is delivered twice, so both styles work:
 *   1. window.<name>(event) when the page defines a global function of that name, and
 *   2. a CustomEvent of that name dispatched on document (document.addEventListener(...)).
 *   handleWalletPayReady  the (emulated) wallet is available: un-hide #merchant-wallet-button
 *   handlePaymentResult   event.detail = success object or gateway error object (spec 2.8)
 *   handlePaymentError    event.detail = a string (raw failure; "CANCELED: ..." when the payer
 *                         closes the sheet)
 *
 * The merchant button: any <button> inside #merchant-wallet-button or an element marked
 * data-walletpay-container, present at ready or added later (one click listener on document),
 * starts the payment; so do WalletPay.attachButton(element) and window.startWalletPay().
 * The payment sheet is an emulated wallet in a CLOSED shadow root (the page's CSS cannot
 * restyle it and the page's DOM queries cannot read it): a modal dialog (focus trap, Escape
 * cancels, focus returns to the trigger) listing the sandbox test cards, with a footer that
 * always shows the total and Pay. The encrypted wallet token is minted by the sandbox's
 * emulated wallet provider (POST /wallet/token), so no private key is ever in this script.
 *
 * Loaded cross-origin from the merchant's page: every call goes to the script's own origin
 * (BASE), which answers CORS for these routes. Before handleWalletPayReady the key is checked
 * (GET /api/v5/publicKeys/current); a refused key raises handlePaymentError instead.
 * Every value a merchant callback returns is validated (spec 2.7); an invalid one is reported
 * (console.error + handlePaymentError "<callback>: <field>: <rule>") and never shown. A
 * callback that does not settle within the callback timeout (WalletPay.configure) ends in an
 * error on the sheet; the payer can try again or cancel.
 */
(function (global) {
  "use strict";

  var NETWORKS = ["AMEX", "DISCOVER", "JCB", "MASTERCARD", "VISA"];
  var METHODS = ["PAN_ONLY", "CRYPTOGRAM_3DS"];
  var INTENTS = ["OFFER", "PAYMENT_AUTHORIZATION", "SHIPPING_ADDRESS", "SHIPPING_OPTION"];
  var BUTTON_COLORS = ["default", "black", "white"];
  var BUTTON_SIZE_MODES = ["static", "fill"];
  var BUTTON_TYPES = ["book", "buy", "checkout", "donate", "order", "pay", "plain", "subscribe",
                      "long", "short"];
  var BUTTON_LOCALES = ("en ar bg ca cs da de el es et fi fr hr id it ja ko ms nl no pl pt ru sk " +
                        "sl sr sv th tr uk zh").split(" ");
  var DISPLAY_ITEM_TYPES = ["LINE_ITEM", "SUBTOTAL"];
  var PRICE_STATUSES = ["FINAL", "PENDING"];
  var CHECKOUT_OPTIONS = ["DEFAULT", "COMPLETE_IMMEDIATE_PURCHASE"];
  var ERROR_REASONS = ["OFFER_INVALID", "PAYMENT_DATA_INVALID", "SHIPPING_ADDRESS_INVALID",
                       "SHIPPING_ADDRESS_UNSERVICEABLE", "SHIPPING_OPTION_INVALID",
                       "OTHER_ERROR"];
  var CURRENCIES = "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAD XAF XCD XCG XOF XPF YER ZAR ZMW ZWG".split(" ");
  var COUNTRIES = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW".split(" ");
  var OPTIONAL_KEYS = ["existingPaymentMethodRequired", "emailRequired", "billingAddressRequired",
    "billingAddressParameters", "callbackIntents", "shippingAddressRequired",
    "shippingAddressParameters", "shippingOptionRequired", "shippingOptionParameters",
    "additionalTransactionInfo", "allowPrepaidCards", "allowCreditCards", "offerInfo",
    "buttonColor", "buttonLocale", "buttonSizeMode", "buttonType", "onPaymentDataChanged",
    "onPaymentAuthorized"];
  var API_VERSION = 2;
  var API_VERSION_MINOR = 0;
  var GATEWAY_NAME = "walletctl-sandbox";

  // ISO 4217 minor units where they are not 2 (the amount's decimals must fit them)
  var MINOR_UNITS = { BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0,
    RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0, BHD: 3, IQD: 3, JOD: 3,
    KWD: 3, LYD: 3, OMR: 3, TND: 3, CLF: 4, UYW: 4 };
  var CALLBACK_TIMEOUT = { value: 20000, min: 1000, max: 120000 }; // ms; WalletPay.configure

  // The gateway is the origin this script came from. document.currentScript is null for
  // type="module" (and for some loaders), so look for our own <script src> then.
  function scriptOrigin() {
    var el = document.currentScript;
    if (el && el.src) return new URL(el.src, global.location.href).origin;
    var scripts = document.querySelectorAll("script[src]");
    for (var i = scripts.length - 1; i >= 0; i--) {
      var url = new URL(scripts[i].src, global.location.href);
      if (/\/walletpay\.js$/.test(url.pathname)) return url.origin;
    }
    if (global.console) {
      console.warn("WalletPay: cannot tell which gateway served walletpay.js (no <script " +
                   "src=\".../walletpay.js\"> on the page); using this page's origin " +
                   global.location.origin);
    }
    return global.location.origin;
  }
  var BASE = scriptOrigin();
  // What the sheet relies on, as it was when this script loaded: a page that replaces
  // fetch, attachShadow or MessagePort's postMessage later can neither read the closed sheet
  // nor its traffic.
  var nativeFetch = global.fetch.bind(global);
  var nativeAttachShadow = Element.prototype.attachShadow;
  var nativePost = MessagePort.prototype.postMessage;

  // ---- errors and events ------------------------------------------------------------------

  // A bad argument: .code DEVELOPER_ERROR, .parameter, .rule, message
  // "runWalletPay: <parameter>: <rule>".
  function WalletPayError(parameter, rule) {
    var err = failure("DEVELOPER_ERROR", "runWalletPay: " + parameter + ": " + rule);
    err.parameter = parameter;
    err.rule = rule;
    return err;
  }
  WalletPayError.prototype = Object.create(Error.prototype);
  WalletPayError.prototype.constructor = WalletPayError;

  // Any other failure (a Promise rejection): .code and the message; .detail for a gateway
  // error object.
  function failure(code, message, detail) {
    var err = new Error(message);
    Object.setPrototypeOf(err, WalletPayError.prototype);
    err.name = "WalletPayError";
    err.code = code;
    if (detail !== undefined) err.detail = detail;
    return err;
  }

  // A value in an error message: only short strings that cannot be a key are echoed.
  function shown(v) {
    if (typeof v === "string" && (v.length > 24 || /^(pk|sk)_/i.test(v))) {
      return "a string of " + v.length + " characters, not shown";
    }
    var text = JSON.stringify(v);
    return text === undefined ? String(v) : text;
  }

  // A deferred Promise whose rejection never counts as unhandled by itself (a page that
  // only uses the events must not get "Uncaught (in promise)").
  function deferred() {
    var d = { settled: false };
    d.promise = new Promise(function (resolve, reject) { d.resolve = resolve; d.reject = reject; });
    d.promise.catch(function () { return undefined; });
    return d;
  }
  function settle(d, ok, value) {
    if (!d || d.settled) return;
    d.settled = true;
    if (ok) d.resolve(value); else d.reject(value);
  }

  function raise(name, detail) {
    var event = new CustomEvent(name, { detail: detail });
    tellTestingDriver(name, detail); // before the page's handler, which may navigate away
    if (typeof global[name] === "function") {
      try { global[name](event); } catch (e) { if (global.console) console.error(e); }
    }
    document.dispatchEvent(event);
  }

  function compact(obj) {
    // null / undefined properties are omitted (spec 2.8), recursively for plain objects
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return obj;
    var out = {};
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      if (v === null || v === undefined) return;
      if (typeof v === "object" && !Array.isArray(v)) {
        v = compact(v);
        if (Object.keys(v).length === 0) return;
      }
      out[k] = v;
    });
    return out;
  }

