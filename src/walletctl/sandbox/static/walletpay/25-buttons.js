  // ---- the merchant's button --------------------------------------------------------------
  // One capturing click listener on document: a button inside a container present at ready or
  // rendered later (single-page apps) starts the payment, even when the page's own handler
  // stops the event's propagation. WalletPay.attachButton(el) marks any element explicitly.

  var CONTAINERS = "#merchant-wallet-button, [data-walletpay-container]";
  var BUTTONS = "button, [role=button], input[type=button], input[type=submit]";
  var attached = new WeakSet();
  var attachedCount = 0;

  function startsPayment(ev) {
    var path = typeof ev.composedPath === "function" ? ev.composedPath() : [ev.target];
    var sawButton = false;
    for (var i = 0; i < path.length; i++) {
      var n = path[i];
      if (!n || n.nodeType !== 1) continue;
      if (attached.has(n)) return true;
      if (!sawButton) sawButton = n.matches(BUTTONS);
      else if (n.matches(CONTAINERS)) return true;
    }
    return false;
  }

  document.addEventListener("click", function (ev) {
    if (!current || !startsPayment(ev)) return;
    ev.preventDefault(); // a button in a form must not submit it
    startWalletPay();
  }, true);

  function attachButton(el) {
    if (!el || el.nodeType !== 1) {
      throw failure("DEVELOPER_ERROR", "WalletPay.attachButton: element: must be a DOM element");
    }
    if (!attached.has(el)) {
      attached.add(el);
      attachedCount += 1;
    }
    return el;
  }

  function warnWithoutContainer() {
    if (attachedCount || document.querySelector(CONTAINERS) || !global.console) return;
    console.warn("WalletPay: handleWalletPayReady fired, but the page has no button " +
                 "container: put the button inside <div id=\"merchant-wallet-button\"> or an " +
                 "element with the data-walletpay-container attribute (it may also be added " +
                 "later), or call WalletPay.attachButton(button).");
  }

  // useWalletPayButton: the wallet's own button goes into every container, now and later.
  var observer = null;
  function watchContainers(cfg) {
    if (observer) { observer.disconnect(); observer = null; }
    if (!cfg.args.useWalletPayButton) return;
    var fill = function () {
      if (current !== cfg) return;
      document.querySelectorAll(CONTAINERS).forEach(function (el) {
        if (!el.querySelector(".walletpay-button")) renderWalletButton(el, cfg.opts);
      });
    };
    fill();
    observer = new MutationObserver(fill);
    observer.observe(document.documentElement, { childList: true, subtree: true });
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

  function removeWalletButtons() {
    if (observer) { observer.disconnect(); observer = null; }
    document.querySelectorAll(".walletpay-button").forEach(function (b) { b.remove(); });
  }

  function renderWalletButton(el, o) {
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

