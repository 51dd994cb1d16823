  // ---- the browser-test driver's private channel (sandbox only) ---------------------------
  // /walletpay-testing.js (window.WalletPayTesting, loaded by a merchant's browser test) drives
  // the sheet through a MessagePort that this script hands out in a cancelable
  // "walletpay-testing-connect" event on window. The driver listens for it in the capture
  // phase from before any page script runs (an init script), takes the port and stops the
  // event, so the page's own listeners never see it. Over the port the driver sends commands
  // (choose a card, fill a section, pick a shipping option, apply an offer code, press Pay,
  // cancel) and reads a small summary (card ids, total, busy, the error line), never the
  // sheet's DOM: the shadow root stays closed. Only the sandbox's walletpay.js contains this
  // file (a real gateway's script has no such channel), and a prod profile's sheet refuses
  // every command.
  // The port alone drives nothing: every command carries a one-time token that the test
  // process got from the sandbox's admin API (POST /_sandbox/testing/token, which no page can
  // call); the sheet redeems it with the sandbox (POST /wallet/testing/redeem, once) before it
  // obeys. A page script that gets a port (no driver on the page) has no token to send.

  var TESTING_CONNECT = "walletpay-testing-connect";
  // each page event, told to the driver before the page's handler runs: a shop that leaves in
  // its handler cannot take the driver's answer with it (what the browser reports to the test
  // runner after a navigation has started can be lost)
  var TESTING_EVENT = "walletpay-testing-event";
  var testingDriven = false;
  var TESTING_FIELDS = {
    email: "walletpay-email",
    billing: { name: "walletpay-bill-name", address1: "walletpay-bill-address1",
               locality: "walletpay-bill-locality", administrativeArea: "walletpay-bill-area",
               postalCode: "walletpay-bill-postal", countryCode: "walletpay-bill-country",
               phoneNumber: "walletpay-bill-phone" },
    shipping: { name: "walletpay-ship-name", address1: "walletpay-ship-address1",
                locality: "walletpay-ship-locality", administrativeArea: "walletpay-ship-area",
                postalCode: "walletpay-ship-postal", countryCode: "walletpay-ship-country",
                phoneNumber: "walletpay-ship-phone" },
  };

  function testingState() {
    var s = sheet;
    var picked = s ? s.root.querySelector('input[name="walletpay-card"]:checked') : null;
    var cards = (s ? s.cfg.cards : current ? current.cards : []) || [];
    return {
      ready: !!(current && current.ready), done: !!(current && current.done), open: !!s,
      cards: cards.map(function (c) { return c.id; }),
      card: picked ? picked.value : null,
      total: s ? s.totalPrice : null, currencyCode: s ? s.currencyCode : null,
      busy: !!(s && s.busy), blocked: !!(s && s.blocked),
      error: s && s.error ? { reason: s.error.reason || "OTHER_ERROR",
                              message: s.error.message || "" } : null,
      notice: s && s.notice || null,
      shippingOptions: s ? s.shippingOptions.map(function (o) { return o.id; }) : [],
      shippingOption: s ? s.selectedOption : null,
      sections: s ? ["email", "billing", "shipping", "shippingOption", "offer"].filter(
        function (name) {
          return !!$({ email: "walletpay-email", billing: "walletpay-billing",
                       shipping: "walletpay-shipping", shippingOption: "walletpay-shipping-option",
                       offer: "walletpay-offer-code" }[name]);
        }) : [],
    };
  }

  function needSheet(op) {
    if (!sheet) throw new Error(op + ": the payment sheet is not open");
    return sheet;
  }

  function setField(id, value, what) {
    var el = $(id);
    if (!el) throw new Error(what + ": this sheet has no such field (not requested)");
    if (typeof value !== "string") throw new Error(what + ": must be a string");
    el.value = value;
    if (el.tagName === "SELECT" && el.value !== value) {
      throw new Error(what + ": " + JSON.stringify(value) + " is not one of the choices");
    }
    return el;
  }

  function fillSection(name, values) {
    if (values === undefined) return;
    var ids = TESTING_FIELDS[name];
    if (!isPlainObject(values)) throw new Error("fill: " + name + ": must be an object");
    var last = null;
    Object.keys(values).forEach(function (k) {
      if (!ids[k]) {
        throw new Error("fill: " + name + "." + k + ": is not a field (" +
                        Object.keys(ids).join(", ") + ")");
      }
      last = setField(ids[k], values[k], "fill: " + name + "." + k);
    });
    // one change event, as a payer leaving the section would cause (SHIPPING_ADDRESS)
    if (last) last.dispatchEvent(new Event("change", { bubbles: true }));
  }

  var TESTING_OPS = {
    state: function () { return testingState(); },
    open: function () {
      if (!sheet) startWalletPay();
      return testingState();
    },
    card: function (args) {
      var s = needSheet("card");
      var ids = s.cfg.cards.map(function (c) { return c.id; });
      var input = ids.indexOf(args.id) >= 0 ?
        s.root.querySelector("#walletpay-card-" + args.id) : null;
      if (!input) {
        throw new Error("card: " + JSON.stringify(args.id) + " is not offered on this sheet " +
                        "(offered: " + ids.join(", ") + ")");
      }
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
      return testingState();
    },
    fill: function (args) {
      needSheet("fill");
      Object.keys(args).forEach(function (k) {
        if (k !== "email" && !TESTING_FIELDS[k]) {
          throw new Error("fill: " + k + ": is not a section (email, billing, shipping)");
        }
      });
      if (args.email !== undefined) setField(TESTING_FIELDS.email, args.email, "fill: email");
      fillSection("billing", args.billing);
      fillSection("shipping", args.shipping);
      return testingState();
    },
    shippingOption: function (args) {
      needSheet("shippingOption");
      var el = setField("walletpay-shipping-option", args.id, "shippingOption");
      el.dispatchEvent(new Event("change", { bubbles: true }));
      return testingState();
    },
    offer: function (args) {
      needSheet("offer");
      setField("walletpay-offer-code", args.code, "offer");
      $("walletpay-offer-apply").click();
      return testingState();
    },
    pay: function () {
      needSheet("pay");
      $("walletpay-pay").click(); // as the payer's press: a disabled Pay does nothing
      return testingState();
    },
    retry: function () {
      needSheet("retry");
      $("walletpay-retry").click();
      return testingState();
    },
    cancel: function () {
      needSheet("cancel");
      $("walletpay-cancel").click();
      return testingState();
    },
  };

  // token -> Promise of its redemption (true: this page may obey commands carrying it)
  var testingGrants = Object.create(null);
  var NO_TOKEN = "a one-time test token is required: the test process gets one from the " +
    "sandbox's admin API (POST /_sandbox/testing/token) and passes it to the driver";

  function granted(token) {
    if (typeof token !== "string" || !token || token.length > 200) {
      return Promise.reject(new Error(NO_TOKEN));
    }
    if (!testingGrants[token]) {
      testingGrants[token] = api("/wallet/testing/redeem", { token: token }).then(function (r) {
        if (!r.ok) {
          throw new Error("the sandbox refused the test token (HTTP " + r.status + ": " +
                          (r.data && r.data.details && r.data.details.message ||
                           r.data && r.data.description || "no reason") + ")");
        }
        return true;
      });
      testingGrants[token].catch(function () { delete testingGrants[token]; });
    }
    return testingGrants[token];
  }

  function answerTesting(port, msg) {
    var reply = { id: msg && msg.id };
    function answer() {
      if (!isPlainObject(msg) || !Object.prototype.hasOwnProperty.call(TESTING_OPS, msg.op)) {
        throw new Error("unknown command " + JSON.stringify(msg && msg.op));
      }
      if (current && current.args.profile === "prod" && msg.op !== "state") {
        throw new Error("a prod profile's payment sheet is never driven (use profile \"test\")");
      }
      return TESTING_OPS[msg.op](isPlainObject(msg.args) ? msg.args : {});
    }
    granted(isPlainObject(msg) ? msg.token : undefined).then(answer).then(function (value) {
      reply.ok = true;
      reply.value = value;
    }, function (err) {
      reply.ok = false;
      reply.error = String(err && err.message || err);
    }).then(function () { nativePost.call(port, reply); });
  }

  function tellTestingDriver(name, detail) {
    if (!testingDriven) return;
    global.dispatchEvent(new CustomEvent(TESTING_EVENT, { detail: { type: name, detail: detail } }));
  }

  function offerTestingChannel() {
    var channel = new MessageChannel();
    var event = new CustomEvent(TESTING_CONNECT, {
      cancelable: true, detail: { port: channel.port2, gateway: BASE } });
    global.dispatchEvent(event);
    if (!event.defaultPrevented) { // no driver on this page
      channel.port1.close();
      return;
    }
    testingDriven = true;
    channel.port1.onmessage = function (ev) { answerTesting(channel.port1, ev.data); };
  }

  // a driver loaded after this script asks for the channel with "walletpay-testing-request"
  global.addEventListener("walletpay-testing-request", offerTestingChannel);
  offerTestingChannel();

