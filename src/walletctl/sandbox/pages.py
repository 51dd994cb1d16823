"""The hosted pages (real HTML, every value escaped): the approval page behind ``redirectUrl``
and the browser wallet's 3-D Secure check behind ``challengeUrl``."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from html import escape
from typing import Any

from fastapi.responses import HTMLResponse

from walletctl.models.money import format_major
from walletctl.sandbox.store import TxRow

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem} table{border-collapse:collapse;width:100%;margin:1rem 0}
td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}
.amount{font-size:1.6rem;font-weight:bold} .note{color:#666;font-size:.9rem}
form{display:inline} button{font-size:1rem;margin:.3rem;padding:.5rem 1rem;cursor:pointer}
"""


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><meta name=\"viewport\" "
        "content=\"width=device-width,initial-scale=1\">"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def approval_page(row: TxRow, token: str, now: datetime) -> str:
    co: dict[str, Any] = row.checkout or {}
    kind = "pre-authorisation" if row.kind == "preauth" else "sale"
    cart = co.get("shoppingCartDetails") or {}
    items = cart.get("itemDetails") or []
    rows = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            escape(str(item.get("productName", ""))),
            escape(str(item.get("productQuantity", ""))),
            escape(_money(item.get("totalAmount"), row.currency)),
        )
        for item in items
        if isinstance(item, dict)
    )
    cart_html = (
        "<h2>Cart</h2><table><tr><th>Item</th><th>Qty</th><th>Total</th></tr>"
        f"{rows}</table>"
        if rows
        else "<p class=\"note\">No cart details were sent.</p>"
    )
    expiry = (
        "<p class=\"note\">This link expires in "
        f"{max(0, int((row.expires_at - now).total_seconds()))} s and works once.</p>"
        if row.expires_at is not None
        else "<p class=\"note\">This link works once.</p>"
    )
    buttons = _buttons(f"/pay/{token}", "action", "", (
        ("approve", "Approve"), ("decline", "Decline"), ("cancel", "Cancel"),
        ("pending", "Leave pending")))
    return_url = (co.get("redirectDetails") or {}).get("returnUrl")
    back = (
        f"<p><a id=\"return\" href=\"{escape(str(return_url))}\">Back to the shop</a></p>"
        if isinstance(return_url, str) and return_url.startswith(("http://", "https://"))
        else ""
    )
    body = (
        "<h1>WalletV2 sandbox — authorise payment</h1>"
        f"<p>Merchant <strong>{escape(row.merchant_id)}</strong>, store "
        f"<strong>{escape(row.store_id)}</strong></p>"
        f"<p class=\"amount\">{escape(format_major(row.amount, row.currency))}</p>"
        f"<p>{escape(kind)} · reference <code>{escape(row.reference)}</code></p>"
        f"{cart_html}{expiry}<div>{buttons}</div>{back}"
    )
    return _page("Authorise payment", body)


def challenge_page(challenge_id: str, account: dict[str, Any], data: dict[str, Any]) -> str:
    """The shopper's 3-D Secure check: what is paid, to whom, with which card; pass or fail."""
    amount = format_major(Decimal(str(data["amount"])), str(data["currencyCode"]))
    # the shop's display name when its server gave one (merchantName), else its ids
    shop = str(data.get("merchantName") or f"{account['merchantId']} / {account['storeId']}")
    answers = _buttons(f"/pay/3ds/{challenge_id}", "answer", "threeds-", (
        ("pass", "Confirm payment"), ("fail", "Fail authentication")))
    body = (
        "<main><h1>3-D Secure check (sandbox)</h1>"
        "<p>Your bank asks you to confirm this payment. This is the walletctl sandbox: "
        "choose whether authentication succeeds.</p>"
        "<table><tbody>"
        f"<tr><th scope=\"row\">Merchant</th><td id=\"threeds-merchant\">{escape(shop)}</td></tr>"
        f"<tr><th scope=\"row\">Amount</th><td class=\"amount\" id=\"threeds-amount\">"
        f"{escape(amount)}</td></tr>"
        f"<tr><th scope=\"row\">Card</th><td>{escape(str(account['cardNetwork']))} "
        f"{escape(str(account['maskedCardNumber']))}</td></tr>"
        f"<tr><th scope=\"row\">Reference</th><td><code>"
        f"{escape(str(data['reference']))}</code></td></tr>"
        "</tbody></table>"
        f"<div>{answers}</div>"
        "<p class=\"note\">This check works once.</p></main>"
    )
    return _page("3-D Secure check", body)


def message_page(title: str, message: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_page(title, f"<h1>{escape(title)}</h1><p>{escape(message)}</p>"),
                        status)


def _buttons(action: str, name: str, id_prefix: str, choices: tuple[tuple[str, str], ...]) -> str:
    """One form a choice, each posting ``name=value`` to ``action``."""
    return "".join(
        f"<form method=\"post\" action=\"{escape(action)}\">"
        f"<input type=\"hidden\" name=\"{name}\" value=\"{value}\">"
        f"<button type=\"submit\" id=\"{id_prefix}{value}\">{label}</button></form>"
        for value, label in choices)


def _money(value: Any, currency: str) -> str:
    return "" if value is None else format_major(Decimal(str(value)), currency)
