/*
 * walletpay-testing.js: the browser-test driver of the walletctl sandbox's payment sheet.
 *
 * A merchant's browser test adds this file to its pages before they load (Playwright
 * context.add_init_script(path=...) / addInitScript({path}), Cypress
 * cy.on("window:before:load"), Selenium CDP Page.addScriptToEvaluateOnNewDocument, or a
 * <script> before walletpay.js) and then drives the sandbox's sheet through one object:
 *
 *   await WalletPayTesting.pay({card: "mc-token"})         -> the event.detail the page got
 *   await WalletPayTesting.pay({card: "visa-pan", email: "a@b.example",
 *                               billing: {postalCode: "10115"}, shipping: {...},
 *                               shippingOption: "express", offer: "SAVE2"})
 *   await WalletPayTesting.cancel()                         -> the CANCELED message
 *   await WalletPayTesting.challenge("pass" | "fail")       (on the sandbox's 3DS page)
 *   step by step: ready(), open(), chooseCard(id), fill({email, billing, shipping}),
 *   chooseShippingOption(id), applyOffer(code), pressPay(), state()
 *
 * It never reads the sheet: the sandbox's walletpay.js hands it a private MessagePort
 * ("walletpay-testing-connect", taken in the capture phase before any page script can see
 * it) that carries commands and a small summary (card ids, total, busy, error line). Only the
 * sandbox's walletpay.js offers that port, and a sheet of profile "prod" refuses commands.
 * Every failure rejects with an Error whose message starts with "WalletPayTesting: ".
 */
(function (global) {
  "use strict";
  if (global.WalletPayTesting) return;

  var DEFAULT_TIMEOUT = 20000;
  var POLL_MS = 40;
  var PAY_KEYS = ["card", "email", "billing", "shipping", "shippingOption", "offer",
                  "timeoutMs"];
  var port = null;
  var gateway = null;
  var seq = 0;
  var pending = {};
  var events = []; // the page's wallet events, in order: {type, detail}

  function fail(message) { return new Error("WalletPayTesting: " + message); }

  global.addEventListener("walletpay-testing-connect", function (ev) {
    if (!ev.detail || !ev.detail.port) return;
    ev.stopImmediatePropagation(); // the page's own listeners never get the port
    ev.preventDefault();
    if (port) port.close();
    port = ev.detail.port;
    gateway = ev.detail.gateway;
    port.onmessage = function (m) {
      var waiter = pending[m.data && m.data.id];
      if (!waiter) return;
      delete pending[m.data.id];
      if (m.data.ok) waiter.resolve(m.data.value);
      else waiter.reject(fail(m.data.error));
    };
  }, true);

  // the page's events, seen in the capture phase on window (they are dispatched on document);
  // each wakes the waits at once, so pay() answers before the page's own handler can navigate
  var wake = [];
  ["handleWalletPayReady", "handlePaymentResult", "handlePaymentError"].forEach(function (type) {
    global.addEventListener(type, function (ev) {
      events.push({ type: type, detail: ev.detail });
      wake.splice(0).forEach(function (resume) { resume(); });
    }, true);
  });

  // ms, or sooner when the page dispatches one of its events
  function sleep(ms) {
    return new Promise(function (resolve) {
      function resume() { clearTimeout(timer); resolve(); }
      var timer = setTimeout(function () {
        var at = wake.indexOf(resume);
        if (at >= 0) wake.splice(at, 1);
        resolve();
      }, ms);
      wake.push(resume);
    });
  }

  // poll check() until it returns a value other than undefined (or throws), or time out
  function waitFor(what, check, timeoutMs) {
    var limit = Date.now() + (timeoutMs || DEFAULT_TIMEOUT);
    function round() {
      return Promise.resolve().then(check).then(function (value) {
        if (value !== undefined) return value;
        if (Date.now() > limit) {
          throw fail("timed out after " + (timeoutMs || DEFAULT_TIMEOUT) + " ms waiting for " +
                     what);
        }
        return sleep(POLL_MS).then(round);
      });
    }
    return round();
  }

  function connected(timeoutMs) {
    if (!port && global.document) global.dispatchEvent(new Event("walletpay-testing-request"));
    return waitFor("the sandbox's walletpay.js (is it loaded from the sandbox on this page?)",
                   function () { return port ? port : undefined; }, timeoutMs);
  }

  function call(op, args) {
    return connected().then(function (p) {
      return new Promise(function (resolve, reject) {
        var id = ++seq;
        pending[id] = { resolve: resolve, reject: reject };
        p.postMessage({ id: id, op: op, args: args || {} });
      });
    });
  }

  function state() { return call("state"); }

  // the sheet settled after a change: not busy; a blocking error (or a refused offer) rejects
  function settled(what, timeoutMs, offer) {
    return waitFor(what, function () {
      return state().then(function (s) {
        if (s.busy) return undefined;
        if (s.error && (s.blocked || offer)) {
          throw fail(what + ": the sheet shows " + s.error.reason + ": " + s.error.message);
        }
        return s;
      });
    }, timeoutMs);
  }

  function ready(timeoutMs) {
    return waitFor("handleWalletPayReady (runWalletPay called, key accepted)", function () {
      return state().then(function (s) { return s.ready ? s : undefined; });
    }, timeoutMs);
  }

  // The merchant's own button when there is a visible one (the page's click path runs);
  // else the sheet is opened as startWalletPay() would.
  function open(timeoutMs) {
    return ready(timeoutMs).then(function (s) {
      if (s.open) return s;
      if (s.done) throw fail("open: this payment is complete (call runWalletPay again)");
      var button = Array.prototype.find.call(document.querySelectorAll(
        "#merchant-wallet-button button, [data-walletpay-container] button"),
      function (b) { return !b.disabled && b.getClientRects().length > 0; });
      return button ? (button.click(), state()) : call("open");
    }).then(function () {
      return waitFor("the payment sheet to open", function () {
        return state().then(function (s) { return s.open ? s : undefined; });
      }, timeoutMs);
    }).then(function () { return settled("the sheet's first update", timeoutMs); });
  }

  function chooseCard(id) { return call("card", { id: id }); }
  function fill(sections, timeoutMs) {
    return call("fill", sections).then(function () {
      return settled("the shop's answer to the address", timeoutMs);
    });
  }
  function chooseShippingOption(id, timeoutMs) {
    return call("shippingOption", { id: id }).then(function () {
      return settled("the shop's answer to shipping option " + id, timeoutMs);
    });
  }
  function applyOffer(code, timeoutMs) {
    return call("offer", { code: code }).then(function () {
      return settled("the shop's answer to offer code " + code, timeoutMs, true);
    });
  }

  // Press Pay; resolves with the next handlePaymentResult's event.detail. Rejects with the
  // next handlePaymentError message, or with the error the sheet shows when it stays open.
  // The outcome is taken from the page's event in that event's own task (no message of the
  // port waited for in between): a page that navigates as soon as it has the payment cannot
  // take the answer with it.
  function pressPay(timeoutMs) {
    var mark = events.length, pressed = false, refused = null;
    call("pay").then(function () { pressed = true; }, function (e) { refused = e; });
    function outcome() {
      for (var i = mark; i < events.length; i++) {
        if (events[i].type === "handlePaymentResult") return events[i].detail;
        if (events[i].type === "handlePaymentError") throw fail(String(events[i].detail));
      }
      return undefined;
    }
    return waitFor("the payment's outcome", function () {
      var seen = outcome();
      if (seen !== undefined) return seen;
      if (refused) throw refused;
      if (!pressed) return undefined; // an event wakes the wait at once
      return new Promise(function (resolve, reject) {
        function woke() {
          try { resolve(outcome()); } catch (e) { reject(e); }
        }
        wake.push(woke); // the page's event, while the sheet's state is on its way
        state().then(function (s) {
          var at = wake.indexOf(woke);
          if (at >= 0) wake.splice(at, 1);
          if (s.open && !s.busy && s.error) {
            reject(fail("the sheet shows " + s.error.reason + ": " + s.error.message));
          } else if (s.open && !s.busy && s.notice) {
            reject(fail("the sheet says: " + s.notice));
          } else {
            resolve(outcome());
          }
        }, reject);
      });
    }, timeoutMs);
  }

  function pay(options) {
    var o = options === undefined ? {} : options;
    if (o === null || typeof o !== "object" || Array.isArray(o)) {
      return Promise.reject(fail("pay: options must be an object"));
    }
    var unknown = Object.keys(o).filter(function (k) { return PAY_KEYS.indexOf(k) < 0; });
    if (unknown.length) {
      return Promise.reject(fail("pay: " + unknown[0] + ": is not an option (" +
                                 PAY_KEYS.join(", ") + ")"));
    }
    var t = o.timeoutMs;
    return open(t).then(function () {
      return o.card === undefined ? null : chooseCard(o.card);
    }).then(function () {
      var sections = {};
      ["email", "billing", "shipping"].forEach(function (k) {
        if (o[k] !== undefined) sections[k] = o[k];
      });
      return Object.keys(sections).length ? fill(sections, t) : null;
    }).then(function () {
      return o.shippingOption === undefined ? null : chooseShippingOption(o.shippingOption, t);
    }).then(function () {
      return o.offer === undefined ? null : applyOffer(o.offer, t);
    }).then(function () { return pressPay(t); });
  }

  // Cancel the open sheet; resolves with the handlePaymentError message (CANCELED: ...).
  function cancel(timeoutMs) {
    var mark = events.length;
    return call("cancel").then(function () {
      return waitFor("the cancellation", function () {
        for (var i = mark; i < events.length; i++) {
          if (events[i].type === "handlePaymentError") return String(events[i].detail);
        }
        return undefined;
      }, timeoutMs);
    });
  }

  // On the sandbox's hosted 3DS page (/pay/3ds/{id}): answer it as the shopper would.
  function challenge(outcome, timeoutMs) {
    if (outcome !== "pass" && outcome !== "fail") {
      return Promise.reject(fail("challenge: outcome must be \"pass\" or \"fail\""));
    }
    return waitFor("the sandbox's 3-D Secure page (/pay/3ds/...)", function () {
      var onPage = /^\/pay\/3ds\/ch_[0-9a-f]+$/.test(global.location.pathname);
      var button = onPage && document.getElementById("threeds-" + outcome);
      return button || undefined;
    }, timeoutMs).then(function (button) {
      var amount = document.getElementById("threeds-amount");
      // the page navigates after this: later than the answer reaches the test runner
      setTimeout(function () { button.click(); }, 250);
      return { challengeId: global.location.pathname.split("/").pop(), outcome: outcome,
               amount: amount ? amount.textContent : null };
    });
  }

  global.WalletPayTesting = Object.freeze({
    pay: pay, cancel: cancel, challenge: challenge, ready: ready, open: open,
    chooseCard: chooseCard, fill: fill, chooseShippingOption: chooseShippingOption,
    applyOffer: applyOffer, pressPay: pressPay, state: state,
    events: function () { return events.slice(); },
    gateway: function () { return gateway; },
  });
})(window);
