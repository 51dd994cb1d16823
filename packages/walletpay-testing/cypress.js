// Cypress commands: import "walletpay-testing/cypress" in cypress/support/e2e.js. The driver
// is added to every window before it loads; each command gets a one-time token with
// cy.request (from the Cypress runner, not the page). Cypress.env: SANDBOX_URL (default
// http://127.0.0.1:8731), WALLETCTL_SANDBOX_TOKEN (the sandbox's admin token, if any).
//
//   cy.visit("/checkout");
//   cy.walletPay({ card: "mc-token" }).its("cryptogram").should("exist");
//   cy.walletChallenge("pass");   // on the sandbox's 3-D Secure page
/* global Cypress, cy */
"use strict";

const DRIVER = require("./driver.js");

const base = () => String(Cypress.env("SANDBOX_URL") || "http://127.0.0.1:8731")
  .replace(/\/+$/, "");

Cypress.on("window:before:load", (win) => { win.eval(DRIVER); });

function token() {
  const admin = Cypress.env("WALLETCTL_SANDBOX_TOKEN");
  return cy.request({ method: "POST", url: base() + "/_sandbox/testing/token",
                      headers: admin ? { "X-Sandbox-Token": admin } : {} })
    .its("body.token", { log: false });
}

function waitMs(options) { return ((options && options.timeoutMs) || 20000) + 5000; }

Cypress.Commands.add("walletPay", (options = {}) => token().then((t) =>
  cy.window({ log: false }).then({ timeout: waitMs(options) },
    (win) => win.WalletPayTesting.pay(Object.assign({}, options, { token: t })))));

Cypress.Commands.add("walletCancel", (options = {}) => token().then((t) =>
  cy.window({ log: false }).then({ timeout: waitMs(options) },
    (win) => win.WalletPayTesting.cancel(Object.assign({}, options, { token: t })))));

Cypress.Commands.add("walletState", () => token().then((t) =>
  cy.window({ log: false }).then((win) => win.WalletPayTesting.state({ token: t }))));

Cypress.Commands.add("walletChallenge", (outcome = "pass", options = {}) =>
  cy.location("pathname", { timeout: waitMs(options) }).should("match", /^\/pay\/3ds\//)
    .then(() => cy.window({ log: false }).then({ timeout: waitMs(options) },
      (win) => win.WalletPayTesting.challenge(outcome, options.timeoutMs))));
