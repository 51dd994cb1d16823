/* The demo merchant's page code (see /demo/merchant). Plain JavaScript, no build step.
 *
 * Prices come from the shop SERVER (/demo/merchant/api/quote): the sheet shows the server's
 * total and the server authorizes that same total. The cryptogram goes to the server only:
 * the page's log and window.demoEvents show "(sent to the shop server)" instead.
 */
(function () {
  "use strict";

  var params = new URLSearchParams(window.location.search);
  var KEPT = "(sent to the shop server)";
  window.demoEvents = [];       // for tests: every event the page received (redacted)
  window.demoAuthorizeCalls = 0;
  var session = null;
  var approvedTotal = null;     // the total of the last update the sheet showed
  var paid = false;

  function redact(detail) {
    if (!detail || typeof detail !== "object") return detail;
    var copy = Object.assign({}, detail);
    if (copy.cryptogram !== undefined) copy.cryptogram = KEPT;
    return copy;
  }

  function log(name, detail) {
    detail = redact(detail);
    window.demoEvents.push({ name: name, detail: detail });
    var li = document.createElement("li");
    li.className = "event-" + name;
    li.textContent = name + (detail === null || detail === undefined ? "" :
      ": " + (typeof detail === "string" ? detail : JSON.stringify(detail)));
    document.getElementById("log").appendChild(li);
  }

  function status(text) { document.getElementById("status").textContent = text; }

  function postJson(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }).then(function (resp) { return resp.json(); });
  }

  // -- the three handlers of spec section 6 ------------------------------------------------

  window.handleWalletPayReady = function () {
    log("handleWalletPayReady", null);
    if (paid) return;
    document.getElementById("merchant-wallet-button").removeAttribute("hidden");
    status("Ready: press the button.");
  };

  window.handlePaymentResult = function (event) {
    var detail = event.detail;
    log("handlePaymentResult", detail);
    if (detail && detail.transactionAccountId) {
      paid = true; // one order, one payment: the button goes away
      document.getElementById("merchant-wallet-button").setAttribute("hidden", "hidden");
    }
    status("Sending the result to the shop server…");
    // The page posts event.detail to the merchant server, which stores cryptogram/ECI, calls
    // Get Payment Account and authorizes the total the payer approved.
    postJson("/demo/merchant/api/result", { detail: detail, approvedTotal: approvedTotal })
      .then(function (outcome) {
        var pre = document.getElementById("result");
        var shown = Object.assign({}, outcome);
        delete shown.detail;
        if (outcome.code) shown = outcome; // an error object of the shop server
        pre.textContent = JSON.stringify(shown, null, 2);
        pre.dataset.outcome = outcome.outcome || outcome.code || "error";
        if (outcome.amount && outcome.outcome === "Approved") {
          document.getElementById("order-paid").textContent =
            "(paid: " + outcome.amount + " " + session.currencyCode + ")";
        }
        status("Outcome: " + (outcome.outcome || outcome.code || "?") +
               (outcome.amount ? " (" + outcome.amount + " " + session.currencyCode + ")" : ""));
      }).catch(function (err) {
        status("Shop server error: " + err);
      });
  };

  window.handlePaymentError = function (event) {
    log("handlePaymentError", event.detail);
    status("Wallet error: " + event.detail);
  };

  // -- runWalletPay --------------------------------------------------------------------------

  function quoteUpdate(quote) {
    approvedTotal = quote.totalPrice;
    var update = {
      newTransactionInfo: { totalPriceStatus: "FINAL", totalPrice: quote.totalPrice,
                            totalPriceLabel: "Total", currencyCode: quote.currencyCode,
                            displayItems: quote.displayItems },
      newOfferInfo: { offers: quote.offers },
    };
    if (quote.error) update.error = quote.error;
    return update;
  }

  function optionalParams() {
    var scenario = params.get("scenario") || "basic";
    var base = {
      emailRequired: true,
      billingAddressRequired: true,
      billingAddressParameters: { format: "MIN" },
      buttonType: "pay",
      buttonColor: "black",
    };
    if (scenario !== "full") return base;
    var failFirst = params.get("failFirst") === "1";
    return {
      emailRequired: true,
      billingAddressRequired: true,
      billingAddressParameters: { format: "FULL", phoneNumberRequired: true },
      shippingAddressRequired: true,
      shippingAddressParameters: { allowedCountryCodes: ["DE", "FR", "NL"],
                                   phoneNumberRequired: true },
      shippingOptionRequired: true,
      shippingOptionParameters: {
        defaultSelectedOptionId: "standard",
        shippingOptions: [
          { id: "standard", label: "Standard", description: "free, 3-5 days" },
          { id: "express", label: "Express", description: "5.00, next day" },
          { id: "overnight", label: "Overnight", description: "12.50" },
        ],
      },
      callbackIntents: ["SHIPPING_ADDRESS", "SHIPPING_OPTION", "OFFER", "PAYMENT_AUTHORIZATION"],
      additionalTransactionInfo: { displayItems: session.quote.displayItems,
                                   totalPriceLabel: "Total" },
      offerInfo: [{ offers: [] }],
      onPaymentDataChanged: function (data) {
        // the shop server prices the payer's choices and remembers them for the authorization
        return postJson("/demo/merchant/api/quote", {
          reference: session.clientSystemTransactionId,
          shippingOptionId: data.shippingOptionData && data.shippingOptionData.id,
          offerCode: data.callbackTrigger === "OFFER" && data.offerData ?
            data.offerData.redemptionCode : undefined,
          shippingAddress: data.shippingAddress,
        }).then(quoteUpdate);
      },
      onPaymentAuthorized: function (paymentData) {
        window.demoAuthorizeCalls += 1;
        if (failFirst && window.demoAuthorizeCalls === 1) {
          return Promise.resolve({ transactionState: "ERROR", error: {
            intent: "PAYMENT_AUTHORIZATION", reason: "PAYMENT_DATA_INVALID",
            message: "Card refused by the shop, please try again." } });
        }
        // The spec's sample: SUCCESS when the processed data carries transactionAccountId.
        if (paymentData.transactionAccountId) {
          return Promise.resolve({ transactionState: "SUCCESS" });
        }
        return Promise.resolve({ transactionState: "ERROR", error: {
          intent: "PAYMENT_AUTHORIZATION", reason: "PAYMENT_DATA_INVALID",
          message: "The payment could not be processed." } });
      },
      buttonType: "buy",
      buttonColor: "white",
      buttonSizeMode: "fill",
    };
  }

  function start() {
    var query = new URLSearchParams();
    ["amount", "currency", "type", "authorize", "ref", "scenario"].forEach(
      function (k) { if (params.has(k)) query.set(k, params.get(k)); });
    // The merchant SERVER gets the API key (public key service) and keeps the encryption
    // key id; the page only receives the public API key.
    fetch("/demo/merchant/api/session?" + query.toString())
      .then(function (resp) { return resp.json(); })
      .then(function (s) {
        if (s.code) throw new Error(s.details && s.details.message || s.code);
        session = s;
        window.demoSession = s;
        approvedTotal = s.quote.totalPrice;
        document.getElementById("order-ref").textContent = s.clientSystemTransactionId;
        document.getElementById("order-amount").textContent = s.amount + " " + s.currencyCode;
        if (params.get("scenario") === "manual") return;
        window.runWalletPay(
          s.merchantId, s.storeId, s.clientSystemTransactionId,
          ["PAN_ONLY", "CRYPTOGRAM_3DS"], ["AMEX", "DISCOVER", "JCB", "MASTERCARD", "VISA"],
          "DE", s.currencyCode, "FINAL", s.amount, "test", s.publicKeyApi,
          params.get("walletButton") === "1", "", "Demo shop", optionalParams());
      })
      .catch(function (err) {
        status("Could not start: " + (err && err.message || err));
      });
  }

  start();
})();
