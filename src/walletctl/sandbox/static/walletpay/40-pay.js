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

  // A merchant callback's answer, or TIMED_OUT after the callback timeout (WalletPay.configure).
  var TIMED_OUT = { timedOut: true };
  function withinTimeout(call) {
    var timer = null;
    var limit = new Promise(function (resolve, reject) {
      timer = setTimeout(function () { reject(TIMED_OUT); }, CALLBACK_TIMEOUT.value);
    });
    return Promise.race([Promise.resolve().then(call), limit]).then(function (value) {
      clearTimeout(timer);
      return value;
    }, function (err) {
      clearTimeout(timer);
      throw err;
    });
  }

  function timedOut(callback, me) {
    var seconds = Math.round(CALLBACK_TIMEOUT.value / 100) / 10;
    var msg = callback + ": did not settle within " + CALLBACK_TIMEOUT.value + " ms (the " +
      "callback timeout, WalletPay.configure({callbackTimeoutMs})); the payer was asked to " +
      "try again or cancel";
    if (global.console) console.error("WalletPay: " + msg);
    raise("handlePaymentError", msg);
    me.busy = me.paying = false;
    me.payWhenReady = undefined;
    return seconds;
  }

  function retryCallback() {
    if (!sheet || !sheet.retry) return;
    var trigger = sheet.retry;
    sheet.retry = null;
    sheet.error = sheet.blocked = null;
    dataChanged(trigger);
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
    me.busyText = "Waiting for the shop to update the total…";
    me.notice = null;
    me.retry = null;
    renderDynamic();
    withinTimeout(function () { return o.onPaymentDataChanged(data); })
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
        if (err === TIMED_OUT) {
          var seconds = timedOut("onPaymentDataChanged", me);
          me.retry = trigger;
          me.blocked = me.error = { reason: "OTHER_ERROR", intent: null,
            message: "The shop did not answer within " + seconds + " s. Press Try again, " +
                     "or Cancel." };
          renderDynamic();
          return;
        }
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
    var email = val("walletpay-email") || "";
    if (o.emailRequired && (email.length > 254 ||
        !/^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$/.test(email))) {
      problems.push("a valid e-mail address");
    }
    if ($("walletpay-billing")) {
      var b = billingAddress();
      ["name", "postalCode", "countryCode"].forEach(function (k) {
        if (!b[k]) problems.push("billing " + k);
      });
      if (b.countryCode && COUNTRIES.indexOf(b.countryCode) < 0) {
        problems.push("a billing country code of two letters (ISO 3166-1 alpha-2)");
      }
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
    me.busyText = "Paying…";
    me.notice = null;
    me.error = null;
    renderDynamic();
    var bill = billingAddress();
    var paymentData = null;
    var accountSent = false;
    api("/wallet/token", {
      cardId: picked.value, gateway: GATEWAY_NAME, gatewayMerchantId: a.mid,
      publicKeyApi: a.publicKeyApi,
    }).then(function (res) {
      if (!res.ok || !res.data || !res.data.paymentMethodData) {
        throw failure("GATEWAY_ERROR", isGatewayError(res.data) ? res.data.details &&
                      res.data.details.message || res.data.description : "the wallet could " +
                      "not make a token (HTTP " + res.status + ")");
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
      accountSent = true;
      return api("/api/v5/paymentAccounts", {
        merchantId: a.mid, storeId: a.sid,
        clientSystemTransactionId: a.clientSystemTransactionId, paymentData: paymentData,
      }, a.publicKeyApi);
    }).then(function (res) {
      var detail;
      if (me !== sheet) return undefined; // cancelled meanwhile (the page removed the sheet)
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
        throw failure("GATEWAY_ERROR", "the gateway answered HTTP " + res.status +
                      " without a result");
      }
      return finish(me, detail, paymentData);
    }).catch(function (err) {
      if (me !== sheet) return;
      if (accountSent && err && err.code === "NETWORK") {
        // the gateway may have made (and stored) the payment account before the answer
        // was lost: say so; nothing was charged, authorization is the merchant server's step
        err = failure("NETWORK", "the connection to the gateway at " + BASE + " was lost " +
          "after the card details were sent (" + err.cause + "): a payment account may have been made but nothing was charged; the payer can " +
          "start the payment again");
      }
      closeSheet();
      reportFailure(me.cfg, err, me);
    });
  }

  function succeed(me, detail) {
    // a payment account was made: this runWalletPay call cannot pay again
    var ok = !!(detail && detail.transactionAccountId);
    if (ok) me.cfg.done = true;
    closeSheet();
    raise("handlePaymentResult", detail);
    if (ok) {
      settle(me.outcome, true, detail);
      settle(me.cfg.outcome, true, detail);
      return;
    }
    // the gateway's error object (spec 2.8): handlePaymentResult as the spec says; the
    // Promise rejects with GATEWAY_ERROR and the object as .detail
    var why = detail.code + (detail.details && detail.details.message ? ": " +
      detail.details.message : detail.description ? ": " + detail.description : "");
    var err = failure("GATEWAY_ERROR", "the gateway refused the payment account (" + why + ")",
                      detail);
    settle(me.outcome, false, err);
    settle(me.cfg.outcome, false, err);
  }

  function finish(me, detail, paymentData) {
    var o = me.cfg.opts;
    if (me.intents.indexOf("PAYMENT_AUTHORIZATION") < 0) {
      succeed(me, detail);
      return undefined;
    }
    var processed = Object.assign({}, paymentData, detail);
    me.busyText = "Waiting for the shop to confirm the payment…";
    renderDynamic();
    return withinTimeout(function () { return o.onPaymentAuthorized(processed); })
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
        if (err === TIMED_OUT) {
          var seconds = timedOut("onPaymentAuthorized", me);
          sheetError("OTHER_ERROR", "The shop did not confirm the payment within " + seconds +
                     " s. Press Pay to try again, or Cancel.", "PAYMENT_AUTHORIZATION");
          return;
        }
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
    if (sheet && sheet.watch) sheet.watch.disconnect();
    document.removeEventListener("focusin", onFocusIn);
    if (sheet && sheet.host) sheet.host.remove();
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
    attachButton: attachButton,
    configure: configure,
    WalletPayError: WalletPayError,
    version: API_VERSION + "." + API_VERSION_MINOR,
    gateway: BASE,
  };
})(window);
