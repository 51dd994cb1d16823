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
                           shown(v) + ")");
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
  function minorDigits(currency) {
    return Object.prototype.hasOwnProperty.call(MINOR_UNITS, currency) ? MINOR_UNITS[currency]
      : 2;
  }
  // An amount in `currency`: a decimal string with at most the currency's ISO 4217 minor
  // digits (JPY 0, EUR 2, KWD 3, CLF 4).
  function needPrice(v, p, allowNegative, currency) {
    var digits = minorDigits(currency);
    var example = { 0: "1234", 2: "123.45", 3: "12.345", 4: "1.2345" }[digits];
    var re = allowNegative ? /^-?\d{1,12}(\.\d+)?$/ : /^\d{1,12}(\.\d+)?$/;
    if (typeof v !== "string" || !re.test(v)) {
      throw WalletPayError(p, "must be a decimal string like " + example +
                           " (no currency symbol)");
    }
    var decimals = (v.split(".")[1] || "").length;
    if (decimals > digits) {
      throw WalletPayError(p, digits === 0
        ? "must be a whole number for " + currency + " (ISO 4217: no minor unit), like " + example
        : "must have at most " + digits + " decimals for " + currency + " (ISO 4217 minor " +
          "unit), like " + example);
    }
    return v;
  }

  // The reference rule (clientSystemTransactionId and every reference derived from one).
  var REFERENCE_RULE = "must be 1-64 printable characters, no tabs, line breaks or control " +
    "characters, not starting or ending with a space";
  var NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}]|[\p{Zs}\p{Zl}\p{Zp}]/u;
  function needReference(v, p) {
    if (typeof v !== "string") throw WalletPayError(p, "must be a string");
    var chars = Array.from(v); // Unicode code points, not UTF-16 units
    if (chars.length < 1 || chars.length > 64) {
      throw WalletPayError(p, REFERENCE_RULE + " (" + chars.length + " given)");
    }
    chars.forEach(function (c, i) {
      if (c !== " " && NOT_PRINTABLE.test(c)) {
        var hex = c.codePointAt(0).toString(16).toUpperCase();
        throw WalletPayError(p, REFERENCE_RULE + " (character " + (i + 1) + " is U+" +
                             "0000".slice(hex.length) + hex + ")");
      }
    });
    if (chars[0] === " " || chars[chars.length - 1] === " ") {
      throw WalletPayError(p, REFERENCE_RULE + " (it starts or ends with a space)");
    }
    return v;
  }

  function validateArgs(a) {
    needString(a.mid, "mid", { max: 64 });
    needString(a.sid, "sid", { max: 64 });
    needReference(a.clientSystemTransactionId, "clientSystemTransactionId");
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
                           "in upper case (got " + shown(a.countryCode) + ")");
    }
    if (typeof a.currencyCode !== "string" || CURRENCIES.indexOf(a.currencyCode) < 0) {
      throw WalletPayError("currencyCode", "must be an ISO 4217 three-letter currency code " +
                           "in upper case (got " + shown(a.currencyCode) + ")");
    }
    if (a.amountStatus !== "FINAL") throw WalletPayError("amountStatus", "must be FINAL");
    needPrice(a.amount, "amount", false, a.currencyCode);
    if (Number(a.amount) <= 0) throw WalletPayError("amount", "must be greater than zero");
    if (a.profile !== "test" && a.profile !== "prod") {
      // never echoed: with one argument missing, profile holds the API key
      throw WalletPayError("profile", "must be test or prod" +
        (typeof a.publicKeyApi !== "string" ? " (the value is not shown; is an argument " +
          "missing? runWalletPay takes 15 positional arguments, publicKeyApi is the 11th)" : ""));
    }
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
                                 "must be an ISO 3166-1 alpha-2 code (got " + shown(c) + ")");
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
      checkShippingOptions(o.shippingOptionParameters, q);
    }
    var tp = P + ".additionalTransactionInfo";
    var ti = o.additionalTransactionInfo;
    if (ti !== undefined) {
      needObject(ti, tp);
      onlyKeys(ti, ["displayItems", "totalPriceLabel", "checkoutOption"], tp);
      if (ti.displayItems !== undefined) {
        validateDisplayItems(ti.displayItems, tp + ".displayItems", a.currencyCode);
      }
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

  function validateDisplayItems(items, p, currency) {
    needArray(items, p).forEach(function (item, i) {
      var q = p + "[" + i + "]";
      needObject(item, q);
      onlyKeys(item, ["label", "type", "price", "status"], q);
      needString(item.label, q + ".label");
      needOneOf(item.type, DISPLAY_ITEM_TYPES, q + ".type");
      needPrice(item.price, q + ".price", true, currency);
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
                           shown(e.intent) + ")");
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
    if (so.defaultSelectedOptionId !== undefined) {
      needString(so.defaultSelectedOptionId, p + ".defaultSelectedOptionId");
      if (ids.indexOf(so.defaultSelectedOptionId) < 0) {
        throw WalletPayError(p + ".defaultSelectedOptionId",
                             "must be the id of one of the shippingOptions");
      }
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
      needPrice(ti.totalPrice, "newTransactionInfo.totalPrice", false,
                me.cfg.args.currencyCode);
      if (Number(ti.totalPrice) <= 0) {
        throw WalletPayError("newTransactionInfo.totalPrice", "must be greater than zero");
      }
      if (ti.currencyCode !== undefined) {
        if (CURRENCIES.indexOf(ti.currencyCode) < 0) {
          throw WalletPayError("newTransactionInfo.currencyCode", "must be an ISO 4217 " +
                               "three-letter code in upper case (got " +
                               shown(ti.currencyCode) + ")");
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
        validateDisplayItems(ti.displayItems, "newTransactionInfo.displayItems",
                             me.cfg.args.currencyCode);
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

