  // ---- the emulated payment sheet ---------------------------------------------------------
  // A closed shadow root on <walletpay-host>: the page's stylesheets do not apply inside it
  // and :host resets what would inherit (!important inside beats !important outside), so a
  // merchant's CSS changes neither its colours, its layout nor its controls; the page's DOM
  // queries do not see into it. Layout: a scrolling body and a footer that always shows the
  // total, the busy / error lines and Pay / Cancel (phones get a full-height bottom sheet).
  // Real pages: the styles are a constructed stylesheet (adoptedStyleSheets), so a page's
  // Content-Security-Policy needs no style nonce and no 'unsafe-inline'; the sheet is a
  // <dialog> opened with showModal(), so it is in the top layer (no transform, filter or
  // z-index of the page can move or cover it) and the rest of the page is inert; it is
  // pinned to the visual viewport (what the phone shows) with element.style, which CSP
  // allows, so a page wider than the phone cannot push Total and Pay off-screen.

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

  function choice(id, label, values, selected) {
    var select = h("select", { id: id, name: id });
    values.forEach(function (c) { select.appendChild(h("option", { value: c, text: c })); });
    select.value = values.indexOf(selected) >= 0 ? selected : values[0];
    return h("label", { "class": "walletpay-field", "for": id }, [h("span", { text: label }),
                                                                   select]);
  }

  // Opens the sheet; the Promise settles with this sheet's outcome (like runWalletPay's).
  function startWalletPay() {
    var refused = null;
    if (!current || !current.ready) {
      refused = "startWalletPay: call runWalletPay first (and wait for handleWalletPayReady)";
    } else if (current.done) {
      refused = "startWalletPay: this payment is complete; call runWalletPay for a new one";
    }
    if (refused) {
      raise("handlePaymentError", refused);
      var d = deferred();
      settle(d, false, failure("DEVELOPER_ERROR", refused));
      return d.promise;
    }
    if (!sheet) openSheet(current);
    return sheet.outcome.promise;
  }

  var SHEET_CSS = [
    // the host takes no room: the sheet itself is in the top layer
    ":host{all:initial!important;display:block!important;position:fixed!important;",
    "top:0!important;left:0!important;width:0!important;height:0!important;",
    "overflow:visible!important;color-scheme:light!important}",
    "*{box-sizing:border-box}",
    "[hidden]{display:none!important}",
    // top/left/width/height: the visual viewport, set by fitSheet (this is the fallback)
    "#walletpay-sheet{position:fixed;top:0;left:0;right:auto;bottom:auto;width:100%;",
    "height:100%;max-width:none;max-height:none;margin:0;border:0;padding:0;",
    "background:rgba(0,0,0,.5);overflow:hidden;container-type:size;",
    "font:15px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#111;",
    "text-align:left;direction:ltr}",
    "#walletpay-sheet[open]{display:flex;align-items:center;justify-content:center}",
    // the dialog (what the payer sees) is dimmed, not the backdrop (the layout viewport,
    // misplaced in a right-to-left page wider than the phone)
    "#walletpay-sheet::backdrop{background:transparent}",
    ".walletpay-sheet-box{background:#fff;color:#111;width:calc(100% - 16px);",
    "max-width:480px;max-height:calc(100% - 16px);margin:8px;display:flex;",
    "flex-direction:column;border-radius:8px;overflow:hidden;overflow-wrap:anywhere;",
    "box-shadow:0 8px 32px rgba(0,0,0,.35)}",
    ".walletpay-body{flex:1 1 auto;min-height:0;overflow:auto;padding:16px 16px 8px}",
    ".walletpay-footer{flex:none;padding:10px 16px 12px;border-top:1px solid #c8c8c8;",
    "background:#fff}",
    "h2{margin:0 0 8px;font-size:1.25em;font-weight:700;color:#111}",
    "p{margin:0 0 8px}",
    "fieldset{border:1px solid #bbb;border-radius:6px;margin:10px 0;padding:6px 10px;",
    "min-width:0}",
    "legend{padding:0 4px;font-weight:600;color:#111}",
    ".walletpay-card-list{list-style:none;margin:0;padding:0}",
    ".walletpay-card-list li{margin:0}",
    ".walletpay-card{display:flex;gap:10px;align-items:center;padding:8px 6px;",
    "min-height:44px;cursor:pointer;border-radius:4px;color:#111}",
    ".walletpay-card:has(input:checked){background:#e8f0fb;box-shadow:inset 0 0 0 2px #1a5fb4}",
    "input[type=radio]{appearance:auto;width:18px;height:18px;margin:0;flex:none;",
    "accent-color:#1a5fb4;opacity:1;position:static}",
    ".walletpay-field{display:block;margin:6px 0}",
    ".walletpay-field span{display:block;font-size:.9em;color:#333}",
    "input:not([type=radio]),select{display:block;width:100%;max-width:100%;padding:6px;",
    "font:inherit;color:#111;background:#fff;border:1px solid #767676;border-radius:4px;",
    "min-height:36px}",
    ".walletpay-note{color:#5c3c00;background:#fff4d6;padding:6px;border-radius:4px}",
    ".walletpay-item{display:flex;justify-content:space-between;gap:8px;color:#333}",
    "#walletpay-total-line{display:flex;justify-content:space-between;gap:8px;",
    "font-size:1.1em;margin:0 0 8px;color:#111}",
    "#walletpay-total{font-weight:700}",
    "#walletpay-busy{display:flex;align-items:center;gap:8px;color:#333}",
    ".walletpay-spinner{width:18px;height:18px;flex:none;border:3px solid #c8c8c8;",
    "border-top-color:#1a5fb4;border-radius:50%;animation:walletpay-spin .8s linear infinite}",
    "@keyframes walletpay-spin{to{transform:rotate(360deg)}}",
    "@media (prefers-reduced-motion:reduce){.walletpay-spinner{animation-duration:3s}}",
    "#walletpay-sheet-error{color:#a00000;font-weight:600}",
    ".walletpay-actions{display:flex;gap:8px;margin:0}",
    "button{font:inherit;padding:10px 18px;min-height:44px;border-radius:4px;",
    "border:1px solid #333;background:#fff;color:#111;cursor:pointer}",
    "#walletpay-pay{flex:1 1 auto;background:#111;color:#fff;font-weight:600}",
    "#walletpay-pay[aria-disabled=true],#walletpay-pay:disabled{background:#767676;",
    "border-color:#767676;cursor:not-allowed}",
    "#walletpay-offer-apply{margin-top:4px}",
    ":focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}",
    // a phone (or a short window): a full-width bottom sheet. The dialog (the visual
    // viewport) is the container: what the payer sees decides, not the page's width.
    "@container (max-width:480px) or (max-height:560px){.walletpay-sheet-box{width:100%;",
    "max-width:none;max-height:100%;margin:0;border-radius:12px 12px 0 0;",
    "align-self:flex-end}}",
  ].join("");

  // One constructed stylesheet for every sheet (no <style> element: a page's CSP with a
  // style-src nonce would block one).
  var sheetStyles = null;
  function styles() {
    if (!sheetStyles) {
      sheetStyles = new CSSStyleSheet();
      sheetStyles.replaceSync(SHEET_CSS);
    }
    return sheetStyles;
  }

  // The dialog covers exactly the visual viewport: on a phone whose page is wider than the
  // screen the layout viewport (what position:fixed alone would cover) is larger than what
  // the payer sees. In a right-to-left page the origin of position:fixed is not where the
  // client coordinates start, so where the dialog landed is measured and corrected. Runs on
  // open and on every visual viewport resize / scroll (and the page's zoom is undone first).
  // The page's CSS zoom (on <html>, <body> or any ancestor) reaches the sheet however its
  // styles are reset: an element's effective zoom is its parent's times its own. The dialog
  // takes the inverse as its own zoom, so its px are the visual viewport's px.
  function pageZoom() {
    var z = sheet.host.currentCSSZoom; // the host's effective zoom (its own is 1)
    if (typeof z !== "number" || !(z > 0)) {
      // engines without currentCSSZoom: what 100 px of the unzoomed dialog measure
      sheet.root.style.setProperty("zoom", "1");
      sheet.root.style.setProperty("width", "100px");
      z = sheet.root.getBoundingClientRect().width / 100 || 1;
    }
    return z;
  }

  var fitting = false;
  function fitSheet() {
    var vv = global.visualViewport;
    if (!sheet || !vv) return;
    var st = sheet.root.style;
    st.setProperty("zoom", String(1 / pageZoom()));
    st.setProperty("width", vv.width + "px");
    st.setProperty("height", vv.height + "px");
    st.setProperty("left", "0px");
    st.setProperty("top", "0px");
    var at = sheet.root.getBoundingClientRect();
    st.setProperty("left", vv.offsetLeft - at.left + "px");
    st.setProperty("top", vv.offsetTop - at.top + "px");
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
    var active = sheet.shadow.activeElement;
    var inside = !!active && sheet.root.contains(active);
    if (ev.shiftKey && (active === first || !inside)) {
      ev.preventDefault();
      last.focus();
    } else if (!ev.shiftKey && (active === last || !inside)) {
      ev.preventDefault();
      first.focus();
    }
  }

  function onFocusIn(ev) {
    // aria-modal: focus never stays behind the overlay (inside, the event's target is the host)
    if (sheet && sheet.host && ev.target !== sheet.host) {
      var list = focusables();
      if (list.length) list[0].focus();
    }
  }

  function cancelSheet(why) {
    var me = sheet;
    if (!me) return;
    closeSheet();
    reportFailure(me.cfg, failure("CANCELED", "CANCELED: " + (typeof why === "string" ? why
      : "the payer closed the payment sheet")), me);
  }

  // A single-page app that re-renders may take <walletpay-host> out of the document with
  // the sheet open: that is a cancellation (the call settles, the next one can open a sheet).
  function watchHost(me) {
    me.watch = new MutationObserver(function () {
      if (me === sheet && !me.host.isConnected) {
        cancelSheet("the page removed the payment sheet (<walletpay-host>) while it was open");
      }
    });
    me.watch.observe(document, { childList: true, subtree: true });
  }

  function buildBody(body, cfg) {
    var a = cfg.args;
    var o = cfg.opts;
    var intents = o.callbackIntents || [];
    var name = a.merchantName || a.mid;
    body.appendChild(h("p", { id: "walletpay-title", text: "WalletPay: pay " + name,
                              hidden: "hidden" }));
    body.appendChild(h("h2", { id: "walletpay-merchant", text: name }));
    if (a.profile === "test" || !a.merchantNo) {
      body.appendChild(h("p", { id: "walletpay-unverified", "class": "walletpay-note",
        text: "Unverified merchant (sandbox test environment): no real payment is made." }));
    }
    body.appendChild(h("div", { id: "walletpay-items" }));
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
    body.appendChild(cardList);
    if (o.emailRequired) {
      body.appendChild(field("walletpay-email", "E-mail", "payer@example.com",
                             { type: "email", autocomplete: "email" }));
    }
    if (o.billingAddressRequired) {
      var bp = o.billingAddressParameters || {};
      body.appendChild(addressFields("walletpay-billing", "walletpay-bill-", "Billing address",
                                     bp.format === "FULL", COUNTRIES, a.countryCode,
                                     bp.phoneNumberRequired));
    }
    if (o.shippingAddressRequired) {
      var sp = o.shippingAddressParameters || {};
      var ship = addressFields("walletpay-shipping", "walletpay-ship-", "Shipping address",
                               true, sp.allowedCountryCodes || COUNTRIES, a.countryCode,
                               sp.phoneNumberRequired);
      body.appendChild(ship);
      ship.addEventListener("change", function () { dataChanged("SHIPPING_ADDRESS"); });
    }
    if (o.shippingOptionRequired) {
      var optSel = h("select", { id: "walletpay-shipping-option" });
      body.appendChild(h("label", { "class": "walletpay-field",
                                    "for": "walletpay-shipping-option" },
                         [h("span", { text: "Shipping" }), optSel]));
      optSel.addEventListener("change", function () {
        sheet.selectedOption = optSel.value;
        dataChanged("SHIPPING_OPTION");
      });
    }
    if (intents.indexOf("OFFER") >= 0) {
      var apply = h("button", { type: "button", id: "walletpay-offer-apply", text: "Apply" });
      var offerRow = h("div", { id: "walletpay-offer-row" }, [
        field("walletpay-offer-code", "Offer code", ""), apply]);
      (o.offerInfo || []).forEach(function (oi) {
        oi.offers.forEach(function (of) {
          sheet.offers.push({ redemptionCode: of.redemptionCode, description: of.description });
        });
      });
      offerRow.appendChild(h("ul", { id: "walletpay-offers" }));
      body.appendChild(offerRow);
      apply.addEventListener("click", function () { dataChanged("OFFER"); });
    }
  }

  // an address's fieldset: ids start with prefix; full adds street, city and region
  function addressFields(id, prefix, legend, full, countries, country, phone) {
    var set = h("fieldset", { id: id }, [h("legend", { text: legend })]);
    set.appendChild(field(prefix + "name", "Name", "Test Payer"));
    if (full) {
      set.appendChild(field(prefix + "address1", "Street", "1 Sandbox Street"));
      set.appendChild(field(prefix + "locality", "City", "Berlin"));
      set.appendChild(field(prefix + "area", "Region", "BE"));
    }
    set.appendChild(field(prefix + "postal", "Postal code", "10115"));
    // alpha-2 by construction: a list, not free text
    set.appendChild(choice(prefix + "country", "Country", countries, country));
    if (phone) set.appendChild(field(prefix + "phone", "Phone", "+49 30 1234567", { type: "tel" }));
    return set;
  }

  function buildFooter(footer) {
    footer.appendChild(h("p", { id: "walletpay-total-line", "aria-live": "polite" }, [
      h("span", { id: "walletpay-total-label" }), h("strong", { id: "walletpay-total" })]));
    footer.appendChild(h("p", { id: "walletpay-busy", role: "status" }, [
      h("span", { "class": "walletpay-spinner", "aria-hidden": "true" }),
      h("span", { id: "walletpay-busy-text" })]));
    footer.appendChild(h("p", { id: "walletpay-sheet-error", role: "alert", hidden: "hidden" }));
    footer.appendChild(h("p", { id: "walletpay-sheet-notice", role: "status", hidden: "hidden" }));
    var pay = h("button", { type: "button", id: "walletpay-pay", text: "Pay" });
    var retry = h("button", { type: "button", id: "walletpay-retry", text: "Try again",
                              hidden: "hidden" });
    var cancel = h("button", { type: "button", id: "walletpay-cancel", text: "Cancel" });
    footer.appendChild(h("p", { "class": "walletpay-actions" }, [pay, retry, cancel]));
    pay.addEventListener("click", authorize);
    retry.addEventListener("click", retryCallback);
    cancel.addEventListener("click", cancelSheet);
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
      busyText: "",
      retry: null,    // the callback trigger to ask again after a timeout
      trigger: document.activeElement,
      outcome: deferred(),
    };
    var host = document.createElement("walletpay-host");
    var shadow = nativeAttachShadow.call(host, { mode: "closed" });
    shadow.adoptedStyleSheets = [styles()];
    var root = h("dialog", { id: "walletpay-sheet", role: "dialog", "aria-modal": "true",
                             "aria-labelledby": "walletpay-title", lang: "en", dir: "ltr" });
    var box = h("div", { "class": "walletpay-sheet-box" });
    var body = h("div", { "class": "walletpay-body" });
    var footer = h("div", { "class": "walletpay-footer" });
    box.appendChild(body);
    box.appendChild(footer);
    root.appendChild(box);
    shadow.appendChild(root);
    sheet.host = host;
    sheet.shadow = shadow;
    sheet.root = root;
    buildBody(body, cfg);
    buildFooter(footer);
    root.addEventListener("keydown", onSheetKey);
    // Escape (or a browser's back gesture) asks the dialog to close: that is Cancel
    root.addEventListener("cancel", function (ev) {
      ev.preventDefault();
      cancelSheet();
    });
    document.body.appendChild(host);
    watchHost(sheet);
    document.addEventListener("focusin", onFocusIn);
    root.showModal();
    fitSheet();
    if (global.visualViewport && !fitting) {
      fitting = true; // once per page; fitSheet does nothing while no sheet is open
      global.visualViewport.addEventListener("resize", fitSheet);
      global.visualViewport.addEventListener("scroll", fitSheet);
    }
    renderDynamic();
    var firstCard = root.querySelector('input[name="walletpay-card"]:checked');
    (firstCard || root.querySelector("#walletpay-pay")).focus();
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
      items.appendChild(h("div", { "class": "walletpay-item", "data-type": it.type }, [
        h("span", { text: it.label }),
        h("span", { text: it.price + (it.status === "PENDING" ? " (pending)" : "") })]));
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
    var busy = $("walletpay-busy");
    busy.hidden = !sheet.busy;
    $("walletpay-busy-text").textContent = sheet.busy ? sheet.busyText || "Working…" : "";
    $("walletpay-retry").hidden = !sheet.retry;
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

