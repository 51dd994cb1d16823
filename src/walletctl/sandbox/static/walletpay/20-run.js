  // ---- state ------------------------------------------------------------------------------

  var current = null; // the last runWalletPay call's configuration
  var sheet = null;   // the open sheet's state

  // fetch + JSON. A failure to connect, or a connection lost before the whole answer was
  // read, becomes a NETWORK WalletPayError naming the gateway (never a bare "Failed to fetch").
  function api(path, body, auth) {
    var headers = { "Content-Type": "application/json", "Accept": "application/json" };
    if (auth) headers.Authorization = "PublicApiKey " + auth;
    function lost(err) {
      var cause = String(err && err.message || err);
      var f = failure("NETWORK", "could not reach the gateway at " + BASE + " (" + cause +
        "; is the sandbox running, and is this page's origin allowed? see sandbox serve " +
        "--allow-origin)");
      f.cause = cause;
      throw f;
    }
    return nativeFetch(BASE + path, {
      method: body === undefined ? "GET" : "POST",
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
    }).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        return { status: resp.status, ok: resp.ok, data: data };
      }, lost);
    }, lost);
  }

  function isGatewayError(data) {
    return isPlainObject(data) && typeof data.code === "string";
  }

  // The outcome of a runWalletPay call (and of the sheet that produced it): the Promise
  // settles and, for failures, handlePaymentError carries the message.
  function reportFailure(cfg, err, me) {
    var message = String(err && err.message || err);
    raise("handlePaymentError", message);
    var value = err && err.code ? err : failure("GATEWAY_ERROR", message);
    if (me) settle(me.outcome, false, value);
    if (cfg) settle(cfg.outcome, false, value);
  }

  function configure(options) {
    var P = "WalletPay.configure";
    if (!isPlainObject(options)) throw failure("DEVELOPER_ERROR", P + ": must get an object");
    Object.keys(options).forEach(function (k) {
      if (k !== "callbackTimeoutMs") {
        throw failure("DEVELOPER_ERROR", P + ": " + k + ": is not a known option " +
                      "(callbackTimeoutMs)");
      }
    });
    if (options.callbackTimeoutMs !== undefined) {
      var ms = options.callbackTimeoutMs;
      if (typeof ms !== "number" || !Number.isInteger(ms) || ms < CALLBACK_TIMEOUT.min ||
          ms > CALLBACK_TIMEOUT.max) {
        throw failure("DEVELOPER_ERROR", P + ": callbackTimeoutMs: must be a whole number " +
                      "of milliseconds from " + CALLBACK_TIMEOUT.min + " to " +
                      CALLBACK_TIMEOUT.max);
      }
      CALLBACK_TIMEOUT.value = ms;
    }
    return { callbackTimeoutMs: CALLBACK_TIMEOUT.value };
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
      if (arguments.length > 15) {
        throw WalletPayError("argument " + arguments.length, "runWalletPay takes 15 " +
                             "arguments (optionalParams is the last); got " + arguments.length);
      }
      validateArgs(args);
    } catch (err) {
      if (err && err.name === "WalletPayError") raise("handlePaymentError", err.message);
      throw err;
    }
    var opts = optionalParams || {};
    if (sheet && sheet.paying) {
      // the open sheet's card details are on their way: a second payment is refused at once
      var busy = "runWalletPay: a payment is in progress on the open sheet; call again " +
        "when it settles";
      raise("handlePaymentError", busy);
      var refusal = deferred();
      settle(refusal, false, failure("IN_PROGRESS", busy));
      return refusal.promise;
    }
    var superseded = failure("SUPERSEDED", "runWalletPay: a newer runWalletPay call " +
                             "replaced this one");
    // an open sheet is replaced: it closes now and reopens with this call's total and
    // reference once the call is ready (never two live payments)
    var reopen = false;
    if (sheet) {
      var old = sheet;
      closeSheet();
      settle(old.outcome, false, superseded);
      reopen = true;
    }
    if (current) settle(current.outcome, false, superseded);
    current = { args: args, opts: opts, cards: [], ready: false, done: false,
                outcome: deferred() };
    var me = current;
    removeWalletButtons();
    var keyQuery = "?merchantId=" + encodeURIComponent(mid) + "&storeId=" +
      encodeURIComponent(sid);
    // The key is checked with the gateway first: a refused key never shows the button.
    api("/api/v5/publicKeys/current" + keyQuery, undefined, publicKeyApi).then(function (res) {
      if (!res.ok) {
        var g = isGatewayError(res.data) ? res.data : {};
        throw failure("GATEWAY_ERROR", "publicKeyApi: refused by the gateway (HTTP " +
                      res.status + (g.description ? " " + g.description : "") + "): " +
                      (g.details && g.details.message || g.code || "no error object"),
                      isGatewayError(res.data) ? res.data : undefined);
      }
      return api("/wallet/cards");
    }).then(function (res) {
      if (!res.ok || !res.data || !Array.isArray(res.data.cards)) {
        throw failure("WALLET_UNAVAILABLE", "the wallet is not available (HTTP " +
                      res.status + ")");
      }
      if (me !== current) return;
      // allowCreditCards / allowPrepaidCards false: the wallet hides cards of that funding
      // (debit cards always stay)
      me.cards = res.data.cards.filter(function (c) {
        return allowedCardNetworks.indexOf(c.cardNetwork) >= 0 &&
          allowedMethods.indexOf(c.authMethod) >= 0 &&
          !(opts.allowCreditCards === false && c.funding === "CREDIT") &&
          !(opts.allowPrepaidCards === false && c.funding === "PREPAID");
      });
      if (opts.existingPaymentMethodRequired && me.cards.length === 0) {
        throw failure("WALLET_UNAVAILABLE",
                      "no usable payment method for the allowed card networks " +
                      "and card kinds");
      }
      me.ready = true;
      watchContainers(me);
      raise("handleWalletPayReady", null);
      warnWithoutContainer();
      if (reopen && !sheet && me === current) openSheet(me);
    }).catch(function (err) {
      if (me !== current) return;
      current = null; // a refused key or missing wallet: nothing can start a payment
      reportFailure(me, err);
    });
    return me.outcome.promise;
  }
