/*
 * walletpay.js: the browser wallet client script served by the walletctl sandbox.
 *
 * Plain JavaScript (ES2017), no build step, no third-party code, no network access
 * except to the origin this script was loaded from (the gateway).
 *
 *   runWalletPay(mid, sid, clientSystemTransactionId, allowedMethods, allowedCardNetworks,
 *                countryCode, currencyCode, amountStatus, amount, profile, publicKeyApi,
 *                useWalletPayButton, merchantNo, merchantName, optionalParams)
 *
 * Invalid arguments: runWalletPay THROWS a WalletPayError synchronously (name "WalletPayError",
 * properties .parameter and .rule) AND raises handlePaymentError with the same message:
 *     "runWalletPay: <parameter>: <rule>"   e.g. "runWalletPay: amountStatus: must be FINAL"
 *
 * Events (spec section 6). Each one is delivered twice, so both styles work:
 *   1. window.<name>(event) when the page defines a global function of that name, and
 *   2. a CustomEvent of that name dispatched on document (document.addEventListener(...)).
 *   handleWalletPayReady  the (emulated) wallet is available: un-hide #merchant-wallet-button
 *   handlePaymentResult   event.detail = success object or gateway error object (spec 2.8)
 *   handlePaymentError    event.detail = a string (raw failure; "CANCELED: ..." when the payer
 *                         closes the sheet)
 *
 * The merchant button: any <button> inside #merchant-wallet-button (or the element marked
 * data-walletpay-container) starts the payment; so does window.startWalletPay().
 * The payment sheet is an emulated wallet (a modal DOM dialog: focus trap, Escape cancels,
 * focus returns to the trigger) listing the sandbox test cards; the encrypted wallet token is
 * minted by the sandbox's emulated wallet provider (POST /wallet/token), so no private key is
 * ever in this script.
 *
 * Loaded cross-origin from the merchant's page: every call goes to the script's own origin
 * (BASE), which answers CORS for these routes. Before handleWalletPayReady the key is checked
 * (GET /api/v5/publicKeys/current); a refused key raises handlePaymentError instead.
 * Every value a merchant callback returns is validated (spec 2.7); an invalid one is reported
 * (console.error + handlePaymentError "<callback>: <field>: <rule>") and never shown.
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

  var scriptEl = document.currentScript;
  var BASE = scriptEl && scriptEl.src ? new URL(scriptEl.src).origin : global.location.origin;

  // ---- errors and events ------------------------------------------------------------------

  function WalletPayError(parameter, rule) {
    var err = new Error("runWalletPay: " + parameter + ": " + rule);
    Object.setPrototypeOf(err, WalletPayError.prototype);
    err.name = "WalletPayError";
    err.parameter = parameter;
    err.rule = rule;
    return err;
  }
  WalletPayError.prototype = Object.create(Error.prototype);
  WalletPayError.prototype.constructor = WalletPayError;

  function raise(name, detail) {
    var event = new CustomEvent(name, { detail: detail });
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

  // ---- validation -------------------------------------------------------------------------

  function isPlainObject(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v);
  }
  function needString(v, p, opts) {
    opts = opts || {};
    if (typeof v !== "string") throw WalletPayError(p, "must be a string");
    if (!opts.allowEmpty && v.trim() === "") throw WalletPayError(p, "must not be empty");
    if (opts.max && v.length > opts.max) {
      throw WalletPayError(p, "must be at most " + opts.max + " characters");
    }
    return v;
  }
  function needBool(v, p) {
    if (typeof v !== "boolean") throw WalletPayError(p, "must be a boolean (true or false)");
    return v;
  }
  function needOneOf(v, allowed, p) {
    if (allowed.indexOf(v) < 0) {
      throw WalletPayError(p, "must be one of " + allowed.join(", ") + " (got " +
                           JSON.stringify(v) + ")");
    }
    return v;
  }
  function needArray(v, p, nonEmpty) {
    if (!Array.isArray(v)) throw WalletPayError(p, "must be an array");
    if (nonEmpty && v.length === 0) throw WalletPayError(p, "must not be empty");
    return v;
  }
  function needUnique(list, p) {
    list.forEach(function (item, i) {
      if (list.indexOf(item) !== i) throw WalletPayError(p + "[" + i + "]", "is a duplicate");
    });
  }
  function needObject(v, p) {
    if (!isPlainObject(v)) throw WalletPayError(p, "must be an object");
    return v;
  }
  function onlyKeys(obj, keys, p) {
    Object.keys(obj).forEach(function (k) {
      if (keys.indexOf(k) < 0) throw WalletPayError(p + "." + k, "is not a known field");
    });
  }
  function optBool(obj, key, p) {
    if (obj[key] !== undefined) needBool(obj[key], p + "." + key);
  }
  function needPrice(v, p, allowNegative) {
    var re = allowNegative ? /^-?\d{1,12}(\.\d{1,2})?$/ : /^\d{1,12}(\.\d{1,2})?$/;
    if (typeof v !== "string" || !re.test(v)) {
      throw WalletPayError(p, "must be a decimal string like 123.45 (no currency symbol)");
    }
    return v;
  }

  function validateArgs(a) {
    needString(a.mid, "mid", { max: 64 });
    needString(a.sid, "sid", { max: 64 });
    needString(a.clientSystemTransactionId, "clientSystemTransactionId", { max: 64 });
    needArray(a.allowedMethods, "allowedMethods");
    if (a.allowedMethods.length !== 2 || METHODS.some(function (m) {
      return a.allowedMethods.indexOf(m) < 0;
    })) {
      throw WalletPayError("allowedMethods", 'must be ["PAN_ONLY","CRYPTOGRAM_3DS"]');
    }
    needArray(a.allowedCardNetworks, "allowedCardNetworks", true);
    a.allowedCardNetworks.forEach(function (n, i) {
      needOneOf(n, NETWORKS, "allowedCardNetworks[" + i + "]");
    });
    needUnique(a.allowedCardNetworks, "allowedCardNetworks");
    if (typeof a.countryCode !== "string" || COUNTRIES.indexOf(a.countryCode) < 0) {
      throw WalletPayError("countryCode", "must be a two-letter ISO 3166-1 country code " +
                           "in upper case (got " + JSON.stringify(a.countryCode) + ")");
    }
    if (typeof a.currencyCode !== "string" || CURRENCIES.indexOf(a.currencyCode) < 0) {
      throw WalletPayError("currencyCode", "must be an ISO 4217 three-letter currency code " +
                           "in upper case (got " + JSON.stringify(a.currencyCode) + ")");
    }
    if (a.amountStatus !== "FINAL") throw WalletPayError("amountStatus", "must be FINAL");
    needPrice(a.amount, "amount", false);
    if (Number(a.amount) <= 0) throw WalletPayError("amount", "must be greater than zero");
    needOneOf(a.profile, ["test", "prod"], "profile");
    needString(a.publicKeyApi, "publicKeyApi", { max: 512 });
    needBool(a.useWalletPayButton, "useWalletPayButton");
    var noMerchantNo = a.merchantNo === undefined || a.merchantNo === null || a.merchantNo === "";
    if (a.profile === "prod" && noMerchantNo) {
      throw WalletPayError("merchantNo", "is required when profile is prod");
    }
    if (!noMerchantNo) {
      if (typeof a.merchantNo !== "string" || a.merchantNo.length < 12 ||
          a.merchantNo.length > 18) {
        throw WalletPayError("merchantNo", "must be a string of 12 to 18 characters");
      }
    }
    if (a.merchantName !== undefined && a.merchantName !== null) {
      needString(a.merchantName, "merchantName", { allowEmpty: true, max: 256 });
    }
    validateOptional(a.optionalParams, a);
  }

  function validateOptional(o, a) {
    var P = "optionalParams";
    if (o === undefined || o === null) return;
    needObject(o, P);
    onlyKeys(o, OPTIONAL_KEYS, P);
    ["existingPaymentMethodRequired", "emailRequired", "billingAddressRequired",
     "shippingAddressRequired", "shippingOptionRequired", "allowPrepaidCards",
     "allowCreditCards"].forEach(function (k) { optBool(o, k, P); });
    if (o.billingAddressParameters !== undefined) {
      var bp = needObject(o.billingAddressParameters, P + ".billingAddressParameters");
      onlyKeys(bp, ["format", "phoneNumberRequired"], P + ".billingAddressParameters");
      if (bp.format !== undefined) {
        needOneOf(bp.format, ["MIN", "FULL"], P + ".billingAddressParameters.format");
      }
      optBool(bp, "phoneNumberRequired", P + ".billingAddressParameters");
    }
    var intents = [];
    if (o.callbackIntents !== undefined) {
      intents = needArray(o.callbackIntents, P + ".callbackIntents");
      intents.forEach(function (it, i) {
        needOneOf(it, INTENTS, P + ".callbackIntents[" + i + "]");
      });
      needUnique(intents, P + ".callbackIntents");
    }
    if (o.onPaymentDataChanged !== undefined && typeof o.onPaymentDataChanged !== "function") {
      throw WalletPayError(P + ".onPaymentDataChanged", "must be a function");
    }
    if (o.onPaymentAuthorized !== undefined && typeof o.onPaymentAuthorized !== "function") {
      throw WalletPayError(P + ".onPaymentAuthorized", "must be a function");
    }
    var dataIntents = intents.filter(function (it) { return it !== "PAYMENT_AUTHORIZATION"; });
    if (dataIntents.length && typeof o.onPaymentDataChanged !== "function") {
      throw WalletPayError(P + ".onPaymentDataChanged",
                           "is required (a function) for the " + dataIntents.join(", ") +
                           " callback intent");
    }
    if (intents.indexOf("PAYMENT_AUTHORIZATION") >= 0 &&
        typeof o.onPaymentAuthorized !== "function") {
      throw WalletPayError(P + ".onPaymentAuthorized",
                           "is required (a function) for the PAYMENT_AUTHORIZATION intent");
    }
    if (intents.indexOf("SHIPPING_ADDRESS") >= 0 && o.shippingAddressRequired !== true) {
      throw WalletPayError(P + ".shippingAddressRequired",
                           "must be true when the SHIPPING_ADDRESS intent is used");
    }
    if (intents.indexOf("SHIPPING_OPTION") >= 0 && o.shippingOptionRequired !== true) {
      throw WalletPayError(P + ".shippingOptionRequired",
                           "must be true when the SHIPPING_OPTION intent is used");
    }
    if (o.shippingAddressParameters !== undefined) {
      var sp = needObject(o.shippingAddressParameters, P + ".shippingAddressParameters");
      onlyKeys(sp, ["allowedCountryCodes", "phoneNumberRequired"],
               P + ".shippingAddressParameters");
      if (sp.allowedCountryCodes !== undefined) {
        needArray(sp.allowedCountryCodes, P + ".shippingAddressParameters.allowedCountryCodes",
                  true).forEach(function (c, i) {
          if (COUNTRIES.indexOf(c) < 0) {
            throw WalletPayError(P + ".shippingAddressParameters.allowedCountryCodes[" + i + "]",
                                 "must be an ISO 3166-1 alpha-2 code (got " +
                                 JSON.stringify(c) + ")");
          }
        });
      }
      optBool(sp, "phoneNumberRequired", P + ".shippingAddressParameters");
    }
    if (o.shippingOptionRequired === true && o.shippingAddressRequired !== true) {
      throw WalletPayError(P + ".shippingAddressRequired",
                           "must be true when shippingOptionRequired is true");
    }
    if (o.shippingOptionParameters !== undefined || o.shippingOptionRequired === true) {
      var q = P + ".shippingOptionParameters";
      if (o.shippingOptionParameters === undefined) {
        throw WalletPayError(q, "is required when shippingOptionRequired is true");
      }
      var so = needObject(o.shippingOptionParameters, q);
      onlyKeys(so, ["defaultSelectedOptionId", "shippingOptions"], q);
      var ids = [];
      needArray(so.shippingOptions, q + ".shippingOptions", true).forEach(function (opt, i) {
        var p = q + ".shippingOptions[" + i + "]";
        needObject(opt, p);
        onlyKeys(opt, ["id", "label", "description"], p);
        needString(opt.id, p + ".id");
        needString(opt.label, p + ".label");
        if (opt.description !== undefined) {
          needString(opt.description, p + ".description", { allowEmpty: true });
        }
        ids.push(opt.id);
      });
      needUnique(ids, q + ".shippingOptions.id");
      if (so.defaultSelectedOptionId !== undefined) {
        needString(so.defaultSelectedOptionId, q + ".defaultSelectedOptionId");
        if (ids.indexOf(so.defaultSelectedOptionId) < 0) {
          throw WalletPayError(q + ".defaultSelectedOptionId",
                               "must be the id of one of the shippingOptions");
        }
      }
    }
    var tp = P + ".additionalTransactionInfo";
    var ti = o.additionalTransactionInfo;
    if (ti !== undefined) {
      needObject(ti, tp);
      onlyKeys(ti, ["displayItems", "totalPriceLabel", "checkoutOption"], tp);
      if (ti.displayItems !== undefined) validateDisplayItems(ti.displayItems, tp + ".displayItems");
      if (ti.totalPriceLabel !== undefined) needString(ti.totalPriceLabel, tp + ".totalPriceLabel");
      if (ti.checkoutOption !== undefined) {
        needOneOf(ti.checkoutOption, CHECKOUT_OPTIONS, tp + ".checkoutOption");
        if (ti.checkoutOption === "COMPLETE_IMMEDIATE_PURCHASE" && a.amountStatus !== "FINAL") {
          throw WalletPayError(tp + ".checkoutOption",
                               "COMPLETE_IMMEDIATE_PURCHASE needs amountStatus FINAL");
        }
      }
    }
    var priceUpdates = intents.filter(function (it) {
      return it === "PAYMENT_AUTHORIZATION" || it === "SHIPPING_OPTION" || it === "OFFER";
    });
    if (priceUpdates.length && !(ti && Array.isArray(ti.displayItems) && ti.displayItems.length)) {
      throw WalletPayError(tp + ".displayItems", "is required when the " +
                           priceUpdates.join(", ") + " callback intent is used");
    }
    if (o.offerInfo !== undefined) {
      needArray(o.offerInfo, P + ".offerInfo").forEach(function (info, i) {
        var p = P + ".offerInfo[" + i + "]";
        needObject(info, p);
        onlyKeys(info, ["offers"], p);
        validateOffers(info.offers, p + ".offers");
      });
    }
    if (o.buttonColor !== undefined) needOneOf(o.buttonColor, BUTTON_COLORS, P + ".buttonColor");
    if (o.buttonLocale !== undefined) {
      needOneOf(o.buttonLocale, BUTTON_LOCALES, P + ".buttonLocale");
    }
    if (o.buttonSizeMode !== undefined) {
      needOneOf(o.buttonSizeMode, BUTTON_SIZE_MODES, P + ".buttonSizeMode");
    }
    if (o.buttonType !== undefined) needOneOf(o.buttonType, BUTTON_TYPES, P + ".buttonType");
  }

  function validateDisplayItems(items, p) {
    needArray(items, p).forEach(function (item, i) {
      var q = p + "[" + i + "]";
      needObject(item, q);
      onlyKeys(item, ["label", "type", "price", "status"], q);
      needString(item.label, q + ".label");
      needOneOf(item.type, DISPLAY_ITEM_TYPES, q + ".type");
      needPrice(item.price, q + ".price", true);
      if (item.status !== undefined) needOneOf(item.status, PRICE_STATUSES, q + ".status");
    });
  }

  function validateOffers(offers, p) {
    needArray(offers, p).forEach(function (offer, j) {
      var q = p + "[" + j + "]";
      needObject(offer, q);
      onlyKeys(offer, ["redemptionCode", "description"], q);
      needString(offer.redemptionCode, q + ".redemptionCode");
      needString(offer.description, q + ".description");
    });
  }

  // ---- state ------------------------------------------------------------------------------

  var current = null; // the last runWalletPay call's configuration
  var sheet = null;   // the open sheet's state

  function containerEl() {
    return document.getElementById("merchant-wallet-button") ||
      document.querySelector("[data-walletpay-container]");
  }

  function api(path, body, auth) {
    var headers = { "Content-Type": "application/json", "Accept": "application/json" };
    if (auth) headers.Authorization = "PublicApiKey " + auth;
    return fetch(BASE + path, {
      method: body === undefined ? "GET" : "POST",
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
    }).catch(function (err) {
      throw new Error("could not reach the gateway at " + BASE + " (" + (err && err.message ||
        err) + "; is the sandbox running, and is this page's origin allowed? see " +
        "sandbox serve --allow-origin)");
    }).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        return { status: resp.status, ok: resp.ok, data: data };
      });
    });
  }

  function isGatewayError(data) {
    return isPlainObject(data) && typeof data.code === "string";
  }

  // ---- runWalletPay -----------------------------------------------------------------------

  function runWalletPay(mid, sid, clientSystemTransactionId, allowedMethods, allowedCardNetworks,
                        countryCode, currencyCode, amountStatus, amount, profile, publicKeyApi,
                        useWalletPayButton, merchantNo, merchantName, optionalParams) {
    var args = {
      mid: mid, sid: sid, clientSystemTransactionId: clientSystemTransactionId,
      allowedMethods: allowedMethods, allowedCardNetworks: allowedCardNetworks,
      countryCode: countryCode, currencyCode: currencyCode, amountStatus: amountStatus,
      amount: amount, profile: profile, publicKeyApi: publicKeyApi,
      useWalletPayButton: useWalletPayButton, merchantNo: merchantNo,
      merchantName: merchantName, optionalParams: optionalParams,
    };
    try {
      validateArgs(args);
    } catch (err) {
      if (err && err.name === "WalletPayError") raise("handlePaymentError", err.message);
      throw err;
    }
    var opts = optionalParams || {};
    current = { args: args, opts: opts, cards: [], ready: false, done: false };
    var me = current;
    removeWalletButton();
    var keyQuery = "?merchantId=" + encodeURIComponent(mid) + "&storeId=" +
      encodeURIComponent(sid);
    // The key is checked with the gateway first: a refused key never shows the button.
    api("/api/v5/publicKeys/current" + keyQuery, undefined, publicKeyApi).then(function (res) {
      if (!res.ok) {
        var g = isGatewayError(res.data) ? res.data : {};
        throw new Error("publicKeyApi: refused by the gateway (HTTP " + res.status +
                        (g.description ? " " + g.description : "") + "): " +
                        (g.details && g.details.message || g.code || "no error object"));
      }
      return api("/wallet/cards");
    }).then(function (res) {
      if (!res.ok || !res.data || !Array.isArray(res.data.cards)) {
        throw new Error("the wallet is not available (HTTP " + res.status + ")");
      }
      if (me !== current) return;
      me.cards = res.data.cards.filter(function (c) {
        return allowedCardNetworks.indexOf(c.cardNetwork) >= 0 &&
          allowedMethods.indexOf(c.authMethod) >= 0;
      });
      if (opts.existingPaymentMethodRequired && me.cards.length === 0) {
        throw new Error("no usable payment method for the allowed card networks");
      }
      me.ready = true;
      bindContainer();
      if (useWalletPayButton) renderWalletButton(opts);
      raise("handleWalletPayReady", null);
    }).catch(function (err) {
      if (me !== current) return;
      current = null; // a refused key or missing wallet: nothing can start a payment
      raise("handlePaymentError", String(err && err.message || err));
    });
    return undefined;
  }

  var bound = null;
  function bindContainer() {
    var el = containerEl();
    if (!el || bound === el) return;
    bound = el;
    el.addEventListener("click", function (ev) {
      var target = ev.target;
      while (target && target !== el && target.tagName !== "BUTTON") target = target.parentNode;
      if (target && target.tagName === "BUTTON") {
        ev.preventDefault();
        startWalletPay();
      }
    });
  }

  var BUTTON_TEXT = {
    en: { book: "Book with", buy: "Buy with", checkout: "Checkout with", donate: "Donate with",
          order: "Order with", pay: "Pay with", subscribe: "Subscribe with", long: "Buy with" },
    de: { book: "Buchen mit", buy: "Kaufen mit", checkout: "Bezahlen mit", donate: "Spenden mit",
          order: "Bestellen mit", pay: "Zahlen mit", subscribe: "Abonnieren mit",
          long: "Kaufen mit" },
    fr: { book: "Réserver avec", buy: "Acheter avec", checkout: "Payer avec",
          donate: "Faire un don avec", order: "Commander avec", pay: "Payer avec",
          subscribe: "S'abonner avec", long: "Acheter avec" },
  };

  BUTTON_TEXT.es = { book: "Reservar con", buy: "Comprar con", checkout: "Pagar con",
    donate: "Donar con", order: "Pedir con", pay: "Pagar con", subscribe: "Suscribirse con",
    long: "Comprar con" };
  BUTTON_TEXT.it = { book: "Prenota con", buy: "Acquista con", checkout: "Paga con",
    donate: "Dona con", order: "Ordina con", pay: "Paga con", subscribe: "Abbonati con",
    long: "Acquista con" };
  BUTTON_TEXT.nl = { book: "Boeken met", buy: "Kopen met", checkout: "Afrekenen met",
    donate: "Doneren met", order: "Bestellen met", pay: "Betalen met",
    subscribe: "Abonneren met", long: "Kopen met" };
  BUTTON_TEXT.pt = { book: "Reservar com", buy: "Comprar com", checkout: "Pagar com",
    donate: "Doar com", order: "Encomendar com", pay: "Pagar com", subscribe: "Assinar com",
    long: "Comprar com" };

  function removeWalletButton() {
    var el = containerEl();
    var old = el && el.querySelector(".walletpay-button");
    if (old) old.remove();
  }

  function renderWalletButton(o) {
    var el = containerEl();
    if (!el) return;
    removeWalletButton();
    var color = o.buttonColor && o.buttonColor !== "default" ? o.buttonColor : "black";
    var type = o.buttonType || "buy";
    var locale = o.buttonLocale || "en";
    // lang must describe the text: untranslated locales get the English label, lang="en"
    var textLocale = BUTTON_TEXT[locale] ? locale : "en";
    var words = BUTTON_TEXT[textLocale][type];
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "walletpay-button";
    btn.setAttribute("lang", textLocale);
    btn.dataset.buttonLocale = locale;
    btn.dataset.buttonColor = color;
    btn.dataset.buttonType = type;
    btn.dataset.buttonSizeMode = o.buttonSizeMode || "static";
    btn.textContent = (type === "plain" || type === "short" || !words) ? "WalletPay"
      : words + " WalletPay";
    btn.style.cssText = "font:600 15px system-ui,sans-serif;border-radius:4px;padding:10px 18px;" +
      "cursor:pointer;min-width:150px;" +
      (color === "white" ? "background:#fff;color:#000;border:1px solid #888;"
        : "background:#000;color:#fff;border:1px solid #000;") +
      (o.buttonSizeMode === "fill" ? "width:100%;display:block;" : "");
    el.appendChild(btn);
  }

  // ---- the emulated payment sheet ---------------------------------------------------------

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") el.textContent = attrs[k];
      else el.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) el.appendChild(c); });
    return el;
  }

  function field(id, label, value, extra) {
    var input = h("input", Object.assign({ id: id, name: id, value: value || "" }, extra || {}));
    return h("label", { "class": "walletpay-field", "for": id }, [
      h("span", { text: label }), input]);
  }

  function startWalletPay() {
    if (!current || !current.ready) {
      raise("handlePaymentError", "startWalletPay: call runWalletPay first (and wait for " +
                                  "handleWalletPayReady)");
      return;
    }
    if (current.done) {
      raise("handlePaymentError", "startWalletPay: this payment is complete; call " +
                                  "runWalletPay for a new one");
      return;
    }
    if (sheet) return;
    openSheet(current);
  }

  var SHEET_CSS = [
    "#walletpay-sheet{position:fixed;inset:0;background:rgba(0,0,0,.5);display:flex;",
    "align-items:center;justify-content:center;z-index:2147483647;padding:8px;",
    "box-sizing:border-box;font:15px/1.4 system-ui,sans-serif;overflow:auto}",
    "#walletpay-sheet *{box-sizing:border-box}",
    "#walletpay-sheet .walletpay-sheet-box{background:#fff;color:#111;width:100%;",
    "max-width:480px;max-height:calc(100vh - 16px);overflow:auto;padding:16px;",
    "border-radius:8px;overflow-wrap:anywhere}",
    "#walletpay-sheet h2{margin:0 0 8px;font-size:1.25em}",
    "#walletpay-sheet fieldset{border:1px solid #bbb;border-radius:6px;margin:10px 0;",
    "padding:6px 10px;min-width:0}",
    "#walletpay-sheet .walletpay-card-list{list-style:none;margin:0;padding:0}",
    "#walletpay-sheet .walletpay-card-list li{margin:0}",
    "#walletpay-sheet .walletpay-card{display:flex;gap:8px;align-items:center;",
    "padding:8px 2px;min-height:44px;cursor:pointer}",
    "#walletpay-sheet .walletpay-field{display:block;margin:6px 0}",
    "#walletpay-sheet .walletpay-field span{display:block;font-size:.9em;color:#333}",
    "#walletpay-sheet input:not([type=radio]),#walletpay-sheet select{width:100%;",
    "max-width:100%;padding:6px;font:inherit;border:1px solid #767676;border-radius:4px}",
    "#walletpay-sheet .walletpay-note{color:#5c3c00;background:#fff4d6;padding:6px;",
    "border-radius:4px}",
    "#walletpay-sheet #walletpay-sheet-error{color:#a00000;font-weight:600}",
    "#walletpay-sheet .walletpay-actions{display:flex;gap:8px;flex-wrap:wrap;margin-top:12px}",
    "#walletpay-sheet .walletpay-actions button,#walletpay-offer-apply{font:inherit;",
    "padding:10px 18px;min-height:44px;border-radius:4px;border:1px solid #333;",
    "background:#fff;color:#111;cursor:pointer}",
    "#walletpay-sheet #walletpay-pay{background:#111;color:#fff}",
    "#walletpay-sheet #walletpay-pay:disabled{background:#767676;border-color:#767676;",
    "cursor:not-allowed}",
    "#walletpay-sheet :focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}",
  ].join("");

  function ensureStyle() {
    if (document.getElementById("walletpay-style")) return;
    var style = document.createElement("style");
    style.id = "walletpay-style";
    style.textContent = SHEET_CSS;
    (document.head || document.documentElement).appendChild(style);
  }

  var FOCUSABLE = "button:not([disabled]),input:not([disabled]),select:not([disabled])," +
    "textarea:not([disabled]),a[href],[tabindex]:not([tabindex='-1'])";

  function focusables() {
    if (!sheet || !sheet.root) return [];
    return Array.prototype.filter.call(sheet.root.querySelectorAll(FOCUSABLE), function (el) {
      if (el.type === "radio" && !el.checked) return false; // one tab stop per radio group
      return !el.closest("[hidden]") && el.getClientRects().length > 0;
    });
  }

  function onSheetKey(ev) {
    if (!sheet) return;
    if (ev.key === "Escape") {
      ev.preventDefault();
      cancelSheet();
      return;
    }
    if (ev.key !== "Tab") return;
    var list = focusables();
    if (!list.length) return;
    var first = list[0];
    var last = list[list.length - 1];
    var inside = sheet.root.contains(document.activeElement);
    if (ev.shiftKey && (document.activeElement === first || !inside)) {
      ev.preventDefault();
      last.focus();
    } else if (!ev.shiftKey && (document.activeElement === last || !inside)) {
      ev.preventDefault();
      first.focus();
    }
  }

  function onFocusIn(ev) {
    // aria-modal: focus never stays behind the overlay
    if (sheet && sheet.root && !sheet.root.contains(ev.target)) {
      var list = focusables();
      if (list.length) list[0].focus();
    }
  }

  function cancelSheet() {
    closeSheet();
    raise("handlePaymentError", "CANCELED: the payer closed the payment sheet");
  }

  function openSheet(cfg) {
    var a = cfg.args;
    var o = cfg.opts;
    var intents = o.callbackIntents || [];
    var info = o.additionalTransactionInfo || {};
    sheet = {
      cfg: cfg,
      intents: intents,
      totalPrice: a.amount,
      currencyCode: a.currencyCode,
      totalPriceLabel: info.totalPriceLabel || "Total",
      displayItems: (info.displayItems || []).slice(),
      shippingOptions: o.shippingOptionParameters ? o.shippingOptionParameters.shippingOptions
        .slice() : [],
      selectedOption: o.shippingOptionParameters ?
        (o.shippingOptionParameters.defaultSelectedOptionId ||
         o.shippingOptionParameters.shippingOptions[0].id) : null,
      offers: [],
      error: null,
      blocked: null,  // an address / option / invalid-update error: Pay waits for a fix
      busy: false,
      trigger: document.activeElement,
    };
    ensureStyle();
    var root = h("div", { id: "walletpay-sheet", role: "dialog", "aria-modal": "true",
                          "aria-labelledby": "walletpay-title", lang: "en" });
    var box = h("div", { "class": "walletpay-sheet-box" });
    root.appendChild(box);
    var name = a.merchantName || a.mid;
    box.appendChild(h("p", { id: "walletpay-title", "class": "walletpay-note-title",
                             text: "WalletPay: pay " + name, hidden: "hidden" }));
    box.appendChild(h("h2", { id: "walletpay-merchant", text: name }));
    if (a.profile === "test" || !a.merchantNo) {
      box.appendChild(h("p", { id: "walletpay-unverified", "class": "walletpay-note",
        text: "Unverified merchant (sandbox test environment): no real payment is made." }));
    }
    box.appendChild(h("div", { id: "walletpay-items" }));
    box.appendChild(h("p", { id: "walletpay-total-line", "aria-live": "polite" }, [
      h("span", { id: "walletpay-total-label" }), document.createTextNode(": "),
      h("strong", { id: "walletpay-total" })]));
    var cardList = h("fieldset", { id: "walletpay-cards" }, [h("legend", { text: "Card" })]);
    var cardItems = h("ul", { "class": "walletpay-card-list", role: "list" });
    cfg.cards.forEach(function (c, i) {
      var input = h("input", { type: "radio", name: "walletpay-card", value: c.id,
                               id: "walletpay-card-" + c.id, "data-card-id": c.id });
      if (i === 0) input.checked = true;
      cardItems.appendChild(h("li", {}, [h("label", { "class": "walletpay-card", "for": input.id },
        [input, h("span", { text: c.label + " •••• " + c.last4 })])]));
    });
    cardList.appendChild(cardItems);
    box.appendChild(cardList);
    if (o.emailRequired) {
      box.appendChild(field("walletpay-email", "E-mail", "payer@example.com",
                            { type: "email" }));
    }
    if (o.billingAddressRequired) {
      var bp = o.billingAddressParameters || {};
      var bill = h("fieldset", { id: "walletpay-billing" }, [
        h("legend", { text: "Billing address" })]);
      bill.appendChild(field("walletpay-bill-name", "Name", "Test Payer"));
      if (bp.format === "FULL") {
        bill.appendChild(field("walletpay-bill-address1", "Street", "1 Sandbox Street"));
        bill.appendChild(field("walletpay-bill-locality", "City", "Berlin"));
        bill.appendChild(field("walletpay-bill-area", "Region", "BE"));
      }
      bill.appendChild(field("walletpay-bill-postal", "Postal code", "10115"));
      bill.appendChild(field("walletpay-bill-country", "Country", a.countryCode,
                             { maxlength: "2" }));
      if (bp.phoneNumberRequired) {
        bill.appendChild(field("walletpay-bill-phone", "Phone", "+49 30 1234567"));
      }
      box.appendChild(bill);
    }
    if (o.shippingAddressRequired) {
      var sp = o.shippingAddressParameters || {};
      var allowed = sp.allowedCountryCodes || null;
      var ship = h("fieldset", { id: "walletpay-shipping" }, [
        h("legend", { text: "Shipping address" })]);
      ship.appendChild(field("walletpay-ship-name", "Name", "Test Payer"));
      ship.appendChild(field("walletpay-ship-address1", "Street", "1 Sandbox Street"));
      ship.appendChild(field("walletpay-ship-locality", "City", "Berlin"));
      ship.appendChild(field("walletpay-ship-area", "Region", "BE"));
      ship.appendChild(field("walletpay-ship-postal", "Postal code", "10115"));
      var countries = allowed || COUNTRIES;
      var select = h("select", { id: "walletpay-ship-country" });
      countries.forEach(function (c) {
        var opt = h("option", { value: c, text: c });
        select.appendChild(opt);
      });
      select.value = countries.indexOf(a.countryCode) >= 0 ? a.countryCode : countries[0];
      ship.appendChild(h("label", { "class": "walletpay-field", "for": "walletpay-ship-country" },
                         [h("span", { text: "Country" }), select]));
      if (sp.phoneNumberRequired) {
        ship.appendChild(field("walletpay-ship-phone", "Phone", "+49 30 1234567"));
      }
      box.appendChild(ship);
      ship.addEventListener("change", function () { dataChanged("SHIPPING_ADDRESS"); });
    }
    if (o.shippingOptionRequired) {
      var optSel = h("select", { id: "walletpay-shipping-option" });
      box.appendChild(h("label", { "class": "walletpay-field", "for": "walletpay-shipping-option" },
                        [h("span", { text: "Shipping" }), optSel]));
      optSel.addEventListener("change", function () {
        sheet.selectedOption = optSel.value;
        dataChanged("SHIPPING_OPTION");
      });
    }
    if (intents.indexOf("OFFER") >= 0) {
      var offerRow = h("div", { id: "walletpay-offer-row" }, [
        field("walletpay-offer-code", "Offer code", ""),
        h("button", { type: "button", id: "walletpay-offer-apply", text: "Apply" })]);
      (o.offerInfo || []).forEach(function (oi) {
        oi.offers.forEach(function (of) {
          sheet.offers.push({ redemptionCode: of.redemptionCode, description: of.description });
        });
      });
      offerRow.appendChild(h("ul", { id: "walletpay-offers" }));
      box.appendChild(offerRow);
      offerRow.querySelector("#walletpay-offer-apply").addEventListener("click", function () {
        dataChanged("OFFER");
      });
    }
    box.appendChild(h("p", { id: "walletpay-sheet-error", role: "alert", hidden: "hidden" }));
    box.appendChild(h("p", { id: "walletpay-sheet-notice", role: "status", hidden: "hidden" }));
    var pay = h("button", { type: "button", id: "walletpay-pay", text: "Pay" });
    var cancel = h("button", { type: "button", id: "walletpay-cancel", text: "Cancel" });
    box.appendChild(h("p", { "class": "walletpay-actions" }, [pay, document.createTextNode(" "),
                                                               cancel]));
    pay.addEventListener("click", authorize);
    cancel.addEventListener("click", cancelSheet);
    root.addEventListener("keydown", onSheetKey);
    document.body.appendChild(root);
    sheet.root = root;
    document.addEventListener("focusin", onFocusIn);
    renderDynamic();
    var firstCard = root.querySelector('input[name="walletpay-card"]:checked');
    (firstCard || pay).focus();
    if (intents.indexOf("SHIPPING_ADDRESS") >= 0 || intents.indexOf("SHIPPING_OPTION") >= 0) {
      dataChanged("INITIALIZE");
    }
  }

  function $(id) { return sheet && sheet.root ? sheet.root.querySelector("#" + id) : null; }
  function val(id) { var el = $(id); return el ? el.value.trim() : null; }

  function renderDynamic() {
    if (!sheet) return;
    $("walletpay-total-label").textContent = sheet.totalPriceLabel;
    $("walletpay-total").textContent = sheet.totalPrice + " " + sheet.currencyCode;
    var items = $("walletpay-items");
    items.textContent = "";
    sheet.displayItems.forEach(function (it) {
      items.appendChild(h("div", { "class": "walletpay-item", "data-type": it.type,
        text: it.label + ": " + it.price + (it.status === "PENDING" ? " (pending)" : "") }));
    });
    var sel = $("walletpay-shipping-option");
    if (sel) {
      sel.textContent = "";
      sheet.shippingOptions.forEach(function (opt) {
        sel.appendChild(h("option", { value: opt.id,
          text: opt.label + (opt.description ? " — " + opt.description : "") }));
      });
      sel.value = sheet.selectedOption;
    }
    var list = $("walletpay-offers");
    if (list) {
      list.textContent = "";
      sheet.offers.forEach(function (of) {
        list.appendChild(h("li", { "data-code": of.redemptionCode,
                                   text: of.redemptionCode + ": " + of.description }));
      });
    }
    var errEl = $("walletpay-sheet-error");
    if (sheet.error) {
      errEl.hidden = false;
      errEl.dataset.reason = sheet.error.reason || "OTHER_ERROR";
      errEl.textContent = sheet.error.message || sheet.error.reason || "error";
    } else {
      errEl.hidden = true;
      errEl.textContent = "";
    }
    var payBtn = $("walletpay-pay");
    // blocked: disabled. busy (the shop is updating): still clickable, the press is kept
    // (a blur "change" of an address field would otherwise swallow the click on Pay)
    payBtn.disabled = !!sheet.blocked;
    payBtn.setAttribute("aria-disabled", sheet.busy || sheet.blocked ? "true" : "false");
    var notice = $("walletpay-sheet-notice");
    notice.textContent = sheet.notice || "";
    notice.hidden = !sheet.notice;
    if (sheet.blocked) payBtn.setAttribute("aria-describedby", "walletpay-sheet-error");
    else payBtn.removeAttribute("aria-describedby");
    sheet.root.querySelector(".walletpay-sheet-box").setAttribute("aria-busy",
                                                                  sheet.busy ? "true" : "false");
  }

  function shippingAddress(full) {
    if (!$("walletpay-shipping")) return undefined;
    var addr = {
      name: full ? val("walletpay-ship-name") : undefined,
      address1: full ? val("walletpay-ship-address1") : undefined,
      locality: val("walletpay-ship-locality"),
      administrativeArea: val("walletpay-ship-area"),
      postalCode: val("walletpay-ship-postal"),
      countryCode: val("walletpay-ship-country"),
      phoneNumber: full ? val("walletpay-ship-phone") : undefined,
    };
    return compact(addr);
  }

  function billingAddress() {
    if (!$("walletpay-billing")) return undefined;
    return compact({
      name: val("walletpay-bill-name"),
      address1: val("walletpay-bill-address1"),
      locality: val("walletpay-bill-locality"),
      administrativeArea: val("walletpay-bill-area"),
      postalCode: val("walletpay-bill-postal"),
      countryCode: val("walletpay-bill-country"),
      phoneNumber: val("walletpay-bill-phone"),
    });
  }

  function sheetError(reason, message, intent) {
    sheet.error = { reason: reason, message: message, intent: intent };
    renderDynamic();
  }

  // ---- merchant callback results (2.7): validated before anything reaches the sheet ---------

  var UPDATE_KEYS = ["newOfferInfo", "newTransactionInfo", "newShippingOptionParameters",
                     "error"];
  var TRANSACTION_INFO_KEYS = ["totalPriceStatus", "totalPrice", "totalPriceLabel",
                               "currencyCode", "countryCode", "displayItems", "checkoutOption"];
  // errors that leave the payment unpayable until the payer changes something
  var NON_BLOCKING = ["OFFER_INVALID"];

  function checkPaymentDataError(e, p, intents) {
    needObject(e, p);
    onlyKeys(e, ["reason", "message", "intent"], p);
    needOneOf(e.reason, ERROR_REASONS, p + ".reason");
    needString(e.message, p + ".message", { max: 1000 });
    needOneOf(e.intent, INTENTS, p + ".intent");
    if (intents.indexOf(e.intent) < 0) {
      throw WalletPayError(p + ".intent", "must be one of the callbackIntents registered at " +
                           "the start (" + (intents.join(", ") || "none") + "; got " +
                           JSON.stringify(e.intent) + ")");
    }
  }

  function checkShippingOptions(so, p) {
    needObject(so, p);
    onlyKeys(so, ["defaultSelectedOptionId", "shippingOptions"], p);
    var ids = [];
    needArray(so.shippingOptions, p + ".shippingOptions", true).forEach(function (opt, i) {
      var q = p + ".shippingOptions[" + i + "]";
      needObject(opt, q);
      onlyKeys(opt, ["id", "label", "description"], q);
      needString(opt.id, q + ".id");
      needString(opt.label, q + ".label");
      if (opt.description !== undefined) {
        needString(opt.description, q + ".description", { allowEmpty: true });
      }
      ids.push(opt.id);
    });
    needUnique(ids, p + ".shippingOptions.id");
    if (so.defaultSelectedOptionId !== undefined &&
        ids.indexOf(so.defaultSelectedOptionId) < 0) {
      throw WalletPayError(p + ".defaultSelectedOptionId",
                           "must be the id of one of the shippingOptions");
    }
  }

  function checkUpdate(u, me) {
    if (u === undefined || u === null) return;
    needObject(u, "(result)");
    onlyKeys(u, UPDATE_KEYS, "(result)");
    var ti = u.newTransactionInfo;
    if (ti !== undefined) {
      needObject(ti, "newTransactionInfo");
      onlyKeys(ti, TRANSACTION_INFO_KEYS, "newTransactionInfo");
      needPrice(ti.totalPrice, "newTransactionInfo.totalPrice", false);
      if (Number(ti.totalPrice) <= 0) {
        throw WalletPayError("newTransactionInfo.totalPrice", "must be greater than zero");
      }
      if (ti.currencyCode !== undefined) {
        if (CURRENCIES.indexOf(ti.currencyCode) < 0) {
          throw WalletPayError("newTransactionInfo.currencyCode", "must be an ISO 4217 " +
                               "three-letter code in upper case (got " +
                               JSON.stringify(ti.currencyCode) + ")");
        }
        if (ti.currencyCode !== me.cfg.args.currencyCode) {
          throw WalletPayError("newTransactionInfo.currencyCode", "must stay " +
                               me.cfg.args.currencyCode + " (the payment's currencyCode)");
        }
      }
      if (ti.totalPriceStatus !== undefined) {
        needOneOf(ti.totalPriceStatus, ["FINAL"], "newTransactionInfo.totalPriceStatus");
      }
      if (ti.totalPriceLabel !== undefined) {
        needString(ti.totalPriceLabel, "newTransactionInfo.totalPriceLabel", { max: 64 });
      }
      if (ti.checkoutOption !== undefined) {
        needOneOf(ti.checkoutOption, CHECKOUT_OPTIONS, "newTransactionInfo.checkoutOption");
      }
      if (ti.displayItems !== undefined) {
        validateDisplayItems(ti.displayItems, "newTransactionInfo.displayItems");
      }
    }
    if (u.newShippingOptionParameters !== undefined) {
      checkShippingOptions(u.newShippingOptionParameters, "newShippingOptionParameters");
    }
    if (u.newOfferInfo !== undefined) {
      needObject(u.newOfferInfo, "newOfferInfo");
      onlyKeys(u.newOfferInfo, ["offers"], "newOfferInfo");
      validateOffers(u.newOfferInfo.offers, "newOfferInfo.offers");
    }
    if (u.error !== undefined) checkPaymentDataError(u.error, "error", me.intents);
  }

  function checkAuthorizationResult(r, me) {
    needObject(r, "(result)");
    onlyKeys(r, ["transactionState", "error"], "(result)");
    needOneOf(r.transactionState, ["SUCCESS", "ERROR"], "transactionState");
    if (r.error !== undefined) checkPaymentDataError(r.error, "error", me.intents);
  }

  // An invalid callback value is reported to the merchant and never shown as if valid.
  function badCallbackValue(me, callback, err, blocking) {
    var msg = callback + ": " + (err && err.name === "WalletPayError" ?
      err.parameter + ": " + err.rule : String(err && err.message || err));
    if (global.console) console.error("WalletPay: " + msg);
    raise("handlePaymentError", msg);
    var shown = { reason: "OTHER_ERROR", intent: null,
                  message: "The shop sent an answer the wallet cannot use" +
                           (blocking ? "; this payment cannot continue." : ". Try again.") };
    me.error = shown;
    me.blocked = blocking ? shown : me.blocked;
    me.payWhenReady = undefined;
    renderDynamic();
  }

  function dataChanged(trigger) {
    var o = sheet.cfg.opts;
    var intent = trigger === "INITIALIZE" ? null : trigger;
    if (intent && sheet.intents.indexOf(intent) < 0) return; // not registered: nothing to ask
    if (typeof o.onPaymentDataChanged !== "function") return;
    var data = compact({
      callbackTrigger: trigger,
      shippingAddress: shippingAddress(false),
      shippingOptionData: sheet.selectedOption ? { id: sheet.selectedOption } : undefined,
      offerData: trigger === "OFFER" ? {
        redemptionCode: val("walletpay-offer-code"),
        redemptionCodes: [val("walletpay-offer-code")],
      } : undefined,
    });
    var me = sheet;
    var seq = me.seq = (me.seq || 0) + 1; // only the answer to the latest change counts
    me.busy = true;
    me.notice = null;
    renderDynamic();
    Promise.resolve().then(function () { return o.onPaymentDataChanged(data); })
      .then(function (update) {
        if (me !== sheet || seq !== me.seq) return;
        me.busy = false;
        try {
          checkUpdate(update, me);
        } catch (err) {
          badCallbackValue(me, "onPaymentDataChanged", err, true);
          return;
        }
        applyUpdate(update || {});
        payIfPressed(me);
      }, function (err) {
        if (me !== sheet || seq !== me.seq) return;
        me.busy = false;
        // a rejection must be a PaymentDataError (2.7)
        try {
          checkPaymentDataError(err, "(rejection)", me.intents);
        } catch (bad) {
          badCallbackValue(me, "onPaymentDataChanged", bad, true);
          return;
        }
        me.blocked = NON_BLOCKING.indexOf(err.reason) < 0 ? err : null;
        sheetError(err.reason, err.message, err.intent);
        payIfPressed(me);
      });
  }

  function payIfPressed(me) {
    var pressed = me.payWhenReady;
    me.payWhenReady = undefined;
    if (pressed === undefined || me !== sheet || me.blocked || me.busy) return;
    if (pressed === me.totalPrice) {
      authorize();
    } else {
      me.notice = "The total is now " + me.totalPrice + " " + me.currencyCode +
                  ": check it and press Pay again.";
      renderDynamic();
    }
  }

  function applyUpdate(u) {
    var ti = u.newTransactionInfo;
    if (ti) {
      sheet.totalPrice = ti.totalPrice;
      if (ti.totalPriceLabel !== undefined) sheet.totalPriceLabel = ti.totalPriceLabel;
      if (ti.displayItems !== undefined) sheet.displayItems = ti.displayItems.slice();
    }
    var so = u.newShippingOptionParameters;
    if (so) {
      sheet.shippingOptions = so.shippingOptions.slice();
      var ids = sheet.shippingOptions.map(function (x) { return x.id; });
      if (so.defaultSelectedOptionId !== undefined) {
        sheet.selectedOption = so.defaultSelectedOptionId;
      } else if (ids.indexOf(sheet.selectedOption) < 0) {
        sheet.selectedOption = ids[0];
      }
    }
    if (u.newOfferInfo) sheet.offers = u.newOfferInfo.offers.slice();
    if (u.error) {
      sheet.error = { reason: u.error.reason, message: u.error.message, intent: u.error.intent };
      sheet.blocked = NON_BLOCKING.indexOf(u.error.reason) < 0 ? sheet.error : null;
    } else {
      sheet.error = null;
      sheet.blocked = null;
    }
    renderDynamic();
  }

  function checkRequired() {
    var o = sheet.cfg.opts;
    var problems = [];
    if (o.emailRequired && !/^[^@\s]+@[^@\s]+$/.test(val("walletpay-email") || "")) {
      problems.push("a valid e-mail address");
    }
    if ($("walletpay-billing")) {
      var b = billingAddress();
      ["name", "postalCode", "countryCode"].forEach(function (k) {
        if (!b[k]) problems.push("billing " + k);
      });
    }
    if ($("walletpay-shipping")) {
      var s = shippingAddress(true);
      ["name", "address1", "locality", "postalCode", "countryCode"].forEach(function (k) {
        if (!s[k]) problems.push("shipping " + k);
      });
      var sp = o.shippingAddressParameters || {};
      if (sp.phoneNumberRequired && !s.phoneNumber) problems.push("shipping phoneNumber");
    }
    return problems;
  }

  function authorize() {
    if (sheet && sheet.busy && !sheet.paying) {
      sheet.payWhenReady = sheet.totalPrice; // pay once the shop's update is in, if unchanged
      return;
    }
    if (!sheet || sheet.busy || sheet.blocked) return;
    var me = sheet;
    var cfg = me.cfg;
    var a = cfg.args;
    var o = cfg.opts;
    var picked = me.root.querySelector('input[name="walletpay-card"]:checked');
    if (!picked) {
      sheetError("PAYMENT_DATA_INVALID", "Choose a card.", "PAYMENT_AUTHORIZATION");
      return;
    }
    var missing = checkRequired();
    if (missing.length) {
      sheetError("PAYMENT_DATA_INVALID", "Please enter " + missing.join(", ") + ".",
                 "PAYMENT_AUTHORIZATION");
      return;
    }
    me.busy = true;
    me.paying = true;
    me.notice = null;
    me.error = null;
    renderDynamic();
    var bill = billingAddress();
    var paymentData = null;
    api("/wallet/token", {
      cardId: picked.value, gateway: GATEWAY_NAME, gatewayMerchantId: a.mid,
      publicKeyApi: a.publicKeyApi,
    }).then(function (res) {
      if (!res.ok || !res.data || !res.data.paymentMethodData) {
        throw new Error(isGatewayError(res.data) ? res.data.details && res.data.details.message ||
                        res.data.description : "the wallet could not make a token (HTTP " +
                        res.status + ")");
      }
      var pmd = res.data.paymentMethodData;
      if (bill) pmd.info.billingAddress = bill;
      paymentData = compact({
        apiVersion: API_VERSION,
        apiVersionMinor: API_VERSION_MINOR,
        paymentMethodData: pmd,
        email: o.emailRequired ? val("walletpay-email") : undefined,
        shippingAddress: $("walletpay-shipping") ? shippingAddress(true) : undefined,
        shippingOptionData: me.selectedOption ? { id: me.selectedOption } : undefined,
      });
      return api("/api/v5/paymentAccounts", {
        merchantId: a.mid, storeId: a.sid,
        clientSystemTransactionId: a.clientSystemTransactionId, paymentData: paymentData,
      }, a.publicKeyApi);
    }).then(function (res) {
      var detail;
      if (res.ok && res.data && typeof res.data.transactionAccountId === "string") {
        var isToken = res.data.cardType === "Token";
        detail = compact({
          clientSystemTransactionId: a.clientSystemTransactionId,
          transactionAccountId: res.data.transactionAccountId,
          transactionMethod: "WalletPay",
          cryptogram: isToken ? res.data.cryptogram : undefined,
          eciIndicator: isToken ? res.data.eciIndicator : undefined,
          email: paymentData.email,
          billingAddress: bill,
          shippingAddress: paymentData.shippingAddress,
        });
      } else if (isGatewayError(res.data)) {
        detail = compact({ code: res.data.code, description: res.data.description,
          details: isPlainObject(res.data.details) ? { message: res.data.details.message }
            : undefined });
      } else {
        throw new Error("the gateway answered HTTP " + res.status + " without a result");
      }
      return finish(me, detail, paymentData);
    }).catch(function (err) {
      if (me !== sheet) return;
      closeSheet();
      raise("handlePaymentError", String(err && err.message || err));
    });
  }

  function succeed(me, detail) {
    // a payment account was made: this runWalletPay call cannot pay again
    if (detail && detail.transactionAccountId) me.cfg.done = true;
    closeSheet();
    raise("handlePaymentResult", detail);
  }

  function finish(me, detail, paymentData) {
    var o = me.cfg.opts;
    if (me.intents.indexOf("PAYMENT_AUTHORIZATION") < 0) {
      succeed(me, detail);
      return undefined;
    }
    var processed = Object.assign({}, paymentData, detail);
    return Promise.resolve().then(function () { return o.onPaymentAuthorized(processed); })
      .then(function (result) {
        if (me !== sheet) return;
        me.busy = me.paying = false;
        try {
          checkAuthorizationResult(result, me);
        } catch (err) {
          badCallbackValue(me, "onPaymentAuthorized", err, false);
          return;
        }
        if (result.transactionState === "SUCCESS") {
          succeed(me, detail);
          return;
        }
        var e = result.error || { reason: "PAYMENT_DATA_INVALID", intent: "PAYMENT_AUTHORIZATION",
                                  message: "Payment not authorized." };
        sheetError(e.reason, e.message, e.intent);
      }, function (err) {
        if (me !== sheet) return;
        me.busy = me.paying = false;
        try {
          checkPaymentDataError(err, "(rejection)", me.intents);
        } catch (bad) {
          badCallbackValue(me, "onPaymentAuthorized", bad, false);
          return;
        }
        sheetError(err.reason, err.message, err.intent);
      });
  }

  function closeSheet() {
    var trigger = sheet && sheet.trigger;
    document.removeEventListener("focusin", onFocusIn);
    if (sheet && sheet.root) sheet.root.remove();
    sheet = null;
    // focus returns to what opened the sheet (when it is still there)
    if (trigger && trigger.isConnected && typeof trigger.focus === "function" &&
        trigger !== document.body) {
      trigger.focus();
    }
  }

  global.runWalletPay = runWalletPay;
  global.startWalletPay = startWalletPay;
  global.WalletPayError = WalletPayError;
  global.WalletPay = {
    runWalletPay: runWalletPay,
    start: startWalletPay,
    WalletPayError: WalletPayError,
    version: API_VERSION + "." + API_VERSION_MINOR,
    gateway: BASE,
  };
})(window);
