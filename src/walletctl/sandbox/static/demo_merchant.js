/* The demo merchant's page code (see /demo/merchant). Plain JavaScript, no build step. */
(function () {
  "use strict";

  var params = new URLSearchParams(window.location.search);
  window.demoEvents = [];       // for tests: every event the page received
  window.demoAuthorizeCalls = 0;

  function log(name, detail) {
    window.demoEvents.push({ name: name, detail: detail });
    var li = document.createElement("li");
    li.className = "event-" + name;
    li.textContent = name + (detail === null || detail === undefined ? "" :
      ": " + (typeof detail === "string" ? detail : JSON.stringify(detail)));
    document.getElementById("log").appendChild(li);
  }

  // -- the three handlers of spec section 6 ------------------------------------------------

  window.handleWalletPayReady = function () {
    log("handleWalletPayReady", null);
    document.getElementById("merchant-wallet-button").removeAttribute("hidden");
    document.getElementById("status").textContent = "Ready: press the button.";
  };

  window.handlePaymentResult = function (event) {
    var detail = event.detail;
    log("handlePaymentResult", detail);
    document.getElementById("status").textContent = "Sending the result to the shop server…";
    // The page posts event.detail to the merchant server, which stores cryptogram/ECI, calls
    // Get Payment Account and authorizes.
    fetch("/demo/merchant/api/result", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ detail: detail }),
    }).then(function (resp) { return resp.json(); }).then(function (outcome) {
      var pre = document.getElementById("result");
      pre.dataset.outcome = outcome.outcome || "";
      var shown = Object.assign({}, outcome);
      delete shown.detail; // the cryptogram stays on the server side of the demo
      pre.textContent = JSON.stringify(shown, null, 2);
      document.getElementById("status").textContent = "Outcome: " + (outcome.outcome || "?");
    }).catch(function (err) {
      document.getElementById("status").textContent = "Shop server error: " + err;
    });
  };

  window.handlePaymentError = function (event) {
    log("handlePaymentError", event.detail);
    document.getElementById("status").textContent = "Wallet error: " + event.detail;
  };

  // -- runWalletPay --------------------------------------------------------------------------

  function optionalParams(session) {
    var scenario = params.get("scenario") || "basic";
    var base = {
      emailRequired: true,
      billingAddressRequired: true,
      billingAddressParameters: { format: "MIN" },
      buttonType: "pay",
      buttonColor: "black",
    };
    if (scenario !== "full") return base;
    var subtotal = Number(session.amount);
    var shippingCost = { standard: 0, express: 5, overnight: 12.5 };
    var discount = 0;
    var failFirst = params.get("failFirst") === "1";
    function items(option) {
      var list = [{ label: "Subtotal", type: "SUBTOTAL", price: subtotal.toFixed(2) },
                  { label: "Shipping", type: "LINE_ITEM",
                    price: shippingCost[option].toFixed(2) }];
      if (discount) list.push({ label: "Offer", type: "LINE_ITEM", price: (-discount).toFixed(2) });
      return list;
    }
    function total(option) { return (subtotal + shippingCost[option] - discount).toFixed(2); }
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
      additionalTransactionInfo: { displayItems: items("standard"), totalPriceLabel: "Total" },
      offerInfo: [{ offers: [] }],
      onPaymentDataChanged: function (data) {
        var option = (data.shippingOptionData && data.shippingOptionData.id) || "standard";
        var update = {};
        if (data.callbackTrigger === "SHIPPING_ADDRESS" && data.shippingAddress &&
            data.shippingAddress.countryCode === "NL" &&
            /^9/.test(data.shippingAddress.postalCode || "")) {
          update.error = { reason: "SHIPPING_ADDRESS_UNSERVICEABLE", intent: "SHIPPING_ADDRESS",
                           message: "We do not ship to the Frisian islands." };
        }
        if (data.callbackTrigger === "OFFER") {
          var code = data.offerData && data.offerData.redemptionCode;
          if (code === "SAVE2") {
            discount = 2;
            update.newOfferInfo = { offers: [{ redemptionCode: "SAVE2",
                                               description: "2.00 off" }] };
          } else {
            update.error = { reason: "OFFER_INVALID", intent: "OFFER",
                             message: "Unknown offer code " + code };
          }
        }
        update.newTransactionInfo = { totalPriceStatus: "FINAL", totalPrice: total(option),
                                      totalPriceLabel: "Total", currencyCode: session.currencyCode,
                                      displayItems: items(option) };
        return Promise.resolve(update);
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
    ["merchantId", "storeId", "amount", "currency", "type", "authorize", "ref"].forEach(
      function (k) { if (params.has(k)) query.set(k, params.get(k)); });
    // The merchant SERVER gets the API key (public key service) and keeps the encryption
    // key id; the page only receives the public API key.
    fetch("/demo/merchant/api/session?" + query.toString())
      .then(function (resp) { return resp.json(); })
      .then(function (session) {
        window.demoSession = session;
        document.getElementById("order-ref").textContent = session.clientSystemTransactionId;
        document.getElementById("order-amount").textContent =
          session.amount + " " + session.currencyCode;
        if (params.get("scenario") === "manual") return;
        window.runWalletPay(
          session.merchantId, session.storeId, session.clientSystemTransactionId,
          ["PAN_ONLY", "CRYPTOGRAM_3DS"], ["AMEX", "DISCOVER", "JCB", "MASTERCARD", "VISA"],
          "DE", session.currencyCode, "FINAL", session.amount, "test", session.publicKeyApi,
          params.get("walletButton") === "1", "", "Demo shop", optionalParams(session));
      })
      .catch(function (err) {
        document.getElementById("status").textContent = "Could not start: " + err;
      });
  }

  start();
})();
