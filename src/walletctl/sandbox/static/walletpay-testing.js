/*
 * walletpay-testing.js: the browser-test driver of the walletctl sandbox's payment sheet.
 *
 * A merchant's browser test adds this file to its pages before they load (Playwright
 * context.add_init_script(path=...) / addInitScript({path}), Cypress
 * cy.on("window:before:load"), Selenium CDP Page.addScriptToEvaluateOnNewDocument) and then
 * drives the sandbox's sheet through one object. Every command that reaches the sheet needs a
 * one-time token the TEST PROCESS gets from the sandbox's admin API (POST
 * /_sandbox/testing/token; no page can call it): the fixtures (Python wallet_checkout, the
 * walletpay-testing npm package's Playwright fixture and Cypress commands) get and pass it.
 *
 *   await WalletPayTesting.pay({token, card: "mc-token"})  -> the event.detail the page got
 *   await WalletPayTesting.pay({token, card: "visa-pan", email: "a@b.example",
 *                               billing: {postalCode: "10115"}, shipping: {...},
 *                               shippingOption: "express", offer: "SAVE2",
 *                               button: "#buy", openDirectly: false, timeoutMs: 20000,
 *                               answer: (ok, value) => ...})
 *   await WalletPayTesting.cancel({token})                  -> the CANCELED message
 *   await WalletPayTesting.state({token})                   -> the sheet's summary
 *   await WalletPayTesting.challenge("pass" | "fail")       (on the sandbox's 3DS page)
 *   step by step: const s = WalletPayTesting.session(token); s.ready(), s.open(),
 *   s.chooseCard(id), s.fill({email, billing, shipping}), s.chooseShippingOption(id),
 *   s.applyOffer(code), s.pressPay(), s.cancel(), s.state()
 *
 * pay() presses the merchant's own button (a visible button inside #merchant-wallet-button
 * or [data-walletpay-container], or options.button, a CSS selector), waiting for it to appear;
 * openDirectly: true opens the sheet as startWalletPay() would. timeoutMs (default 20000)
 * bounds every wait of the call, the wait for walletpay.js included. answer(ok, value), when
 * given, hears the outcome (true and the detail, or false and the message) once, in the task
 * of the page's event and before the page's handler runs: a test runner told from there gets
 * the answer even when the shop navigates away in its handler.
 *
 * It never reads the sheet: the sandbox's walletpay.js hands it a private MessagePort
 * ("walletpay-testing-connect", taken in the capture phase before any page script can see
 * it) that carries commands and a small summary (card ids, total, busy, error line). The
 * sheet redeems each command's token with the sandbox before it obeys, and a sheet of profile
 * "prod" refuses commands. Every failure rejects with an Error whose message starts with
 * "WalletPayTesting: <step>: " (button, sheet, card, 3-D Secure, ...) and says what was
 * expected.
 */
(function (global) {
  "use strict";
  if (global.WalletPayTesting) return;

  var DEFAULT_TIMEOUT = 20000;
  var POLL_MS = 40;
  var PAY_KEYS = ["token", "card", "email", "billing", "shipping", "shippingOption", "offer",
                  "button", "openDirectly", "timeoutMs", "answer"];
  var MERCHANT_BUTTONS = "#merchant-wallet-button button, [data-walletpay-container] button";
  // taken before any page script runs: a page that replaces them later sees no token
  var post = global.MessagePort.prototype.postMessage;
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
    // a newer port (walletpay.js loaded again, or a page's request): the older one stays
    // open, so the answers still on their way over it arrive
    port = ev.detail.port;
    gateway = ev.detail.gateway;
    port.onmessage = function (m) {
      var waiter = pending[m.data && m.data.id];
      if (!waiter) return;
      delete pending[m.data.id];
      var error = String(m.data.error);
      if (m.data.ok) waiter.resolve(m.data.value);
      else if (error.indexOf(waiter.step + ": ") === 0) waiter.reject(fail(error));
      else waiter.reject(fail(waiter.step + ": " + error));
    };
  }, true);

  // the page's events: walletpay.js tells the driver each one ("walletpay-testing-event")
  // before the page's handler runs, and the driver also sees them in the capture phase on
  // window (they are dispatched on document; an event told already is not counted twice).
  // Each wakes the waits at once and runs the outcome hooks (pay's answer) in its own task.
  var wake = [];
  var hooks = [];
  var told = null;
  function heard(type, detail) {
    events.push({ type: type, detail: detail });
    wake.splice(0).forEach(function (resume) { resume(); });
    hooks.slice().forEach(function (hook) { hook(); });
  }
  global.addEventListener("walletpay-testing-event", function (ev) {
    if (!ev.detail || typeof ev.detail.type !== "string") return;
    ev.stopImmediatePropagation(); // the page's own listeners never see it
    told = ev.detail;
    heard(ev.detail.type, ev.detail.detail);
  }, true);
  ["handleWalletPayReady", "handlePaymentResult", "handlePaymentError"].forEach(function (type) {
    global.addEventListener(type, function (ev) {
      if (told && told.type === type && told.detail === ev.detail) { told = null; return; }
      heard(type, ev.detail);
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

  function limitOf(timeoutMs) { return timeoutMs || DEFAULT_TIMEOUT; }

  // poll check() until it returns a value other than undefined (or throws), or time out:
  // "WalletPayTesting: <step>: timed out after N ms waiting for <what>"
  function waitFor(step, what, check, timeoutMs) {
    var limit = Date.now() + limitOf(timeoutMs);
    function round() {
      return Promise.resolve().then(check).then(function (value) {
        if (value !== undefined) return value;
        if (Date.now() > limit) {
          throw fail(step + ": timed out after " + limitOf(timeoutMs) + " ms waiting for " +
                     what);
        }
        return sleep(POLL_MS).then(round);
      });
    }
    return round();
  }

  function connected(timeoutMs) {
    if (!port && global.document) global.dispatchEvent(new Event("walletpay-testing-request"));
    return waitFor("walletpay.js", "the sandbox's walletpay.js (is it loaded from the " +
                   "sandbox on this page?)", function () { return port ? port : undefined; },
                   timeoutMs);
  }

  // The driver's calls for one test token (the test process got it from the sandbox's admin
  // API); the sheet redeems it before it obeys.
  function session(token) {
    if (typeof token !== "string" || !token) {
      throw fail("a one-time test token is required (the test process gets one from the " +
                 "sandbox: POST /_sandbox/testing/token; the fixtures pass it for you)");
    }

    function call(step, op, args, timeoutMs) {
      return connected(timeoutMs).then(function (p) {
        return new Promise(function (resolve, reject) {
          var id = ++seq;
          // every answer within the call's time: a sheet that never answers ends the wait
          var timer = setTimeout(function () {
            delete pending[id];
            reject(fail(step + ": no answer from the payment sheet within " +
                        limitOf(timeoutMs) + " ms"));
          }, limitOf(timeoutMs));
          pending[id] = {
            resolve: function (v) { clearTimeout(timer); resolve(v); },
            reject: function (e) { clearTimeout(timer); reject(e); },
            step: step,
          };
          post.call(p, { id: id, op: op, args: args || {}, token: token });
        });
      });
    }

    function state(timeoutMs) { return call("state", "state", {}, timeoutMs); }

    // the sheet settled after a change: not busy; a blocking error (or a refused offer) rejects
    function settled(step, what, timeoutMs, offer) {
      return waitFor(step, what, function () {
        return state(timeoutMs).then(function (s) {
          if (s.busy) return undefined;
          if (s.error && (s.blocked || offer)) {
            throw fail(step + ": the sheet shows " + s.error.reason + ": " + s.error.message);
          }
          return s;
        });
      }, timeoutMs);
    }

    function ready(timeoutMs) {
      return waitFor("ready", "handleWalletPayReady (runWalletPay called, key accepted)",
                     function () {
                       return state(timeoutMs).then(function (s) {
                         return s.ready ? s : undefined;
                       });
                     }, timeoutMs);
    }

    function visible(b) { return !b.disabled && b.getClientRects().length > 0; }

    // The merchant's own button (options.button, else a visible one in a container), waited
    // for and pressed; openDirectly opens the sheet as startWalletPay() would.
    function open(options) {
      var o = typeof options === "object" && options !== null ? options : { timeoutMs: options };
      var t = o.timeoutMs;
      var selector = o.button || MERCHANT_BUTTONS;
      return ready(t).then(function (s) {
        if (s.open) return s;
        if (s.done) throw fail("sheet: this payment is complete (call runWalletPay again)");
        if (o.openDirectly) return call("sheet", "open", {}, t);
        return waitFor("button", "a visible, enabled merchant button (" + selector + ") " +
                       "to press; pass button: \"<css selector>\" for another one, or " +
                       "openDirectly: true to open the sheet without it", function () {
                         var found = Array.prototype.find.call(
                           document.querySelectorAll(selector), visible);
                         return found || undefined;
                       }, t).then(function (button) { button.click(); });
      }).then(function () {
        return waitFor("sheet", "the payment sheet to open" + (o.openDirectly ? "" :
                       " after the merchant's button was pressed"), function () {
          return state(t).then(function (s) { return s.open ? s : undefined; });
        }, t);
      }).then(function () { return settled("sheet", "the sheet's first update", t); });
    }

    function chooseCard(id, timeoutMs) { return call("card", "card", { id: id }, timeoutMs); }
    function fill(sections, timeoutMs) {
      return call("fill", "fill", sections, timeoutMs).then(function () {
        return settled("fill", "the shop's answer to the address", timeoutMs);
      });
    }
    function chooseShippingOption(id, timeoutMs) {
      return call("shipping option", "shippingOption", { id: id }, timeoutMs).then(function () {
        return settled("shipping option", "the shop's answer to shipping option " + id,
                       timeoutMs);
      });
    }
    function applyOffer(code, timeoutMs) {
      return call("offer", "offer", { code: code }, timeoutMs).then(function () {
        return settled("offer", "the shop's answer to offer code " + code, timeoutMs, true);
      });
    }

    // Press Pay; resolves with the next handlePaymentResult's event.detail. Rejects with the
    // next handlePaymentError message, or with the error the sheet shows when it stays open.
    // The outcome is taken from the page's event in that event's own task (no message of the
    // port waited for in between): a page that navigates as soon as it has the payment cannot
    // take the answer with it.
    // tell(ok, value), when given, hears the outcome in the event's own task, before the
    // page's handler runs (pay's answer option).
    function pressPay(timeoutMs, tell) {
      var mark = events.length, pressed = false, refused = null;
      call("pay", "pay", {}, timeoutMs).then(function () { pressed = true; },
                                              function (e) { refused = e; });
      function outcome() {
        for (var i = mark; i < events.length; i++) {
          if (events[i].type === "handlePaymentResult") return events[i].detail;
          if (events[i].type === "handlePaymentError") {
            throw fail("pay: " + String(events[i].detail));
          }
        }
        return undefined;
      }
      function hook() {
        var seen;
        try { seen = outcome(); } catch (e) { tell(false, e.message); return; }
        if (seen !== undefined) tell(true, seen);
      }
      if (tell) hooks.push(hook);
      function unhook(v) {
        var at = hooks.indexOf(hook);
        if (at >= 0) hooks.splice(at, 1);
        return v;
      }
      return waitFor("pay", "the payment's outcome", function () {
        var seen = outcome();
        if (seen !== undefined) return seen;
        if (refused) throw refused;
        if (!pressed) return undefined; // an event wakes the wait at once
        return new Promise(function (resolve, reject) {
          function woke() {
            try { resolve(outcome()); } catch (e) { reject(e); }
          }
          wake.push(woke); // the page's event, while the sheet's state is on its way
          state(timeoutMs).then(function (s) {
            var at = wake.indexOf(woke);
            if (at >= 0) wake.splice(at, 1);
            if (s.open && !s.busy && s.error) {
              reject(fail("pay: the sheet shows " + s.error.reason + ": " + s.error.message));
            } else if (s.open && !s.busy && s.notice) {
              reject(fail("pay: the sheet says: " + s.notice));
            } else {
              resolve(outcome());
            }
          }, reject);
        });
      }, timeoutMs).then(unhook, function (e) { unhook(); throw e; });
    }

    function pay(options) {
      var o = options === undefined ? {} : options;
      var t = o.timeoutMs;
      var answered = !o.answer;
      function tell(ok, value) { // once: the outcome's own task, or the call's end
        if (answered) return;
        answered = true;
        o.answer(ok, value);
      }
      return open(o).then(function () {
        return o.card === undefined ? null : chooseCard(o.card, t);
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
      }).then(function () { return pressPay(t, o.answer ? tell : null); }).then(function (d) {
        tell(true, d);
        return d;
      }, function (e) {
        tell(false, String((e && e.message) || e));
        throw e;
      });
    }

    // Cancel the open sheet; resolves with the handlePaymentError message (CANCELED: ...).
    function cancel(timeoutMs) {
      var mark = events.length;
      return call("cancel", "cancel", {}, timeoutMs).then(function () {
        return waitFor("cancel", "the cancellation", function () {
          for (var i = mark; i < events.length; i++) {
            if (events[i].type === "handlePaymentError") return String(events[i].detail);
          }
          return undefined;
        }, timeoutMs);
      });
    }

    return Object.freeze({
      pay: pay, cancel: cancel, ready: ready, open: open, chooseCard: chooseCard, fill: fill,
      chooseShippingOption: chooseShippingOption, applyOffer: applyOffer, pressPay: pressPay,
      state: state,
    });
  }

  function checkedOptions(options, keys, what) {
    var o = options === undefined ? {} : options;
    if (o === null || typeof o !== "object" || Array.isArray(o)) {
      throw fail(what + ": options must be an object");
    }
    var unknown = Object.keys(o).filter(function (k) { return keys.indexOf(k) < 0; });
    if (unknown.length) {
      throw fail(what + ": " + unknown[0] + ": is not an option (" + keys.join(", ") + ")");
    }
    if (o.answer !== undefined && typeof o.answer !== "function") {
      throw fail(what + ": answer: must be a function (ok, value)");
    }
    if (o.timeoutMs !== undefined &&
        (typeof o.timeoutMs !== "number" || !(o.timeoutMs > 0))) {
      throw fail(what + ": timeoutMs: must be a positive number of milliseconds");
    }
    return o;
  }

  function attempt(run) {
    try { return Promise.resolve(run()); } catch (e) { return Promise.reject(e); }
  }

  function pay(options) {
    return attempt(function () {
      var o = checkedOptions(options, PAY_KEYS, "pay");
      return session(o.token).pay(o);
    });
  }
  function cancel(options) {
    return attempt(function () {
      var o = checkedOptions(options, ["token", "timeoutMs"], "cancel");
      return session(o.token).cancel(o.timeoutMs);
    });
  }
  function state(options) {
    return attempt(function () {
      var o = checkedOptions(options, ["token", "timeoutMs"], "state");
      return session(o.token).state(o.timeoutMs);
    });
  }

  // On the sandbox's hosted 3DS page (/pay/3ds/{id}): answer it as the shopper would.
  function challenge(outcome, timeoutMs) {
    if (outcome !== "pass" && outcome !== "fail") {
      return Promise.reject(fail("3-D Secure: outcome must be \"pass\" or \"fail\""));
    }
    return waitFor("3-D Secure", "the sandbox's 3-D Secure page (/pay/3ds/...); this page " +
                   "is " + global.location.href, function () {
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
    pay: pay, cancel: cancel, state: state, challenge: challenge, session: session,
    events: function () { return events.slice(); },
    gateway: function () { return gateway; },
  });
})(window);
