"""The browser wallet's results: ``keys`` (masked unless asked), ``account`` (card number
re-masked), ``authorize``; a two-column table, or one row in the data formats."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from walletctl.masking import mask_body, mask_secret
from walletctl.render.console import escape, print_note
from walletctl.render.fit import print_fields
from walletctl.render.formats import View, show

if TYPE_CHECKING:
    from walletctl.models.walletpay import AuthorizationResponse, PaymentAccount
    from walletctl.ops.money.pipeline import Moved
    from walletctl.ops.walletpay import Authorization, AuthorizationPlan, KeysResult


def render_keys(fmt: str, profile: str, result: KeysResult, *, show_secret: bool) -> None:
    k = result.keys
    api_key = k.api_key.get_secret_value()
    enc_key = k.encryption_key.get_secret_value()
    row: dict[str, Any] = {
        "profile": profile,
        "apiKey": api_key if show_secret else mask_secret(api_key),
        "encryptionKey": enc_key if show_secret else mask_secret(enc_key),
        "encryptionKeyId": k.encryption_key_id,
        "expiresAt": k.expires_at,
        "source": result.source,
    }
    if result.saved:
        row["saved"] = list(result.saved)
    _emit(fmt, row, "Public keys")
    if result.cache_error:
        print_note(f"warning: {result.cache_error}")
    if result.saved_key_loses_to:  # saved, yet not what the next command sends (still exit 0)
        print_note(_loses_to(profile, result.saved_key_loses_to))


def render_account(fmt: str, acct: PaymentAccount) -> None:
    row: dict[str, Any] = {
        "transactionAccountId": acct.transaction_account_id,
        "cardType": acct.card_type,
        "authMethod": "PAN_ONLY" if acct.card_type == "Card" else "CRYPTOGRAM_3DS",
        "cardNetwork": acct.card_network,
        # re-masked: never trust a gateway to have masked enough
        "maskedCardNumber": _remask(acct.masked_card_number) if acct.masked_card_number
        else None,
        "expiryMonth": acct.expiry_month,
        "expiryYear": acct.expiry_year,
    }
    for key, value in (acct.model_extra or {}).items():
        if key not in row and key.lower() != "authmethod":
            row[key] = value
    _emit(fmt, mask_body(row), "Payment account")


def render_authorization(fmt: str, movement: Authorization,
                          moved: Moved[AuthorizationPlan, AuthorizationResponse]) -> None:
    record = moved.found or (moved.earlier.record if moved.earlier else None)
    if record is not None:  # this very authorization was there already: nothing was sent
        _emit(fmt, {"clientSystemTransactionId": movement.reference, "alreadyApplied": True,
                    "state": record.state, "type": record.type,
                    "amount": f"{record.transaction_amount:f}",
                    "currencyCode": record.currency_code,
                    "historyEntry": moved.earlier.entry.id if moved.earlier else None},
              "Authorization (already there)")
        return
    assert moved.plan is not None
    assert moved.answer is not None
    req, resp, acct = moved.plan.request, moved.answer, moved.plan.account
    row: dict[str, Any] = {
        "id": resp.id, "state": resp.state, "providerStateCode": resp.provider_state_code,
        "type": resp.type or req.type,
        "amount": f"{resp.amount if resp.amount is not None else movement.amount:f}",
        "currencyCode": resp.currency_code or movement.currency,
        "clientSystemTransactionId": resp.client_system_transaction_id or movement.reference,
        "transactionAccountId": movement.account_id, "cardType": acct.card_type,
    }
    _emit(fmt, row, "Authorization")


def _loses_to(profile: str, source: str) -> str:
    """The one line ``keys --save`` prints when the profile's own key still wins."""
    setting = ("key" if source == "inline key" else "key_env" if source.startswith("env ")
               else "key_file" if source.startswith("file ") else "keyring")
    return (f"warning: the saved API key is not used: profile {profile}'s {source} "
            f"(auth.{setting}) wins; remove {setting} from [profiles.{profile}.auth] to use "
            "the saved one")


def _remask(text: str) -> str:
    """First 6 / last 4 at most, whatever the gateway sent (never trust it to mask enough)."""
    if len(text) > 10:
        return text[:6] + "*" * (len(text) - 10) + text[-4:]
    return "*" * max(len(text) - 4, 0) + text[-4:]


def _emit(fmt: str, row: dict[str, Any], title: str) -> None:
    def table() -> None:
        # a key shown with --show-secret stays whole (the terminal wraps it)
        print_fields(escape(title), [(key, _cell(value)) for key, value in row.items()
                                     if value is not None])

    show(View(rows=[row], document=row, table=table), fmt)


def _cell(value: Any) -> str:
    """A table cell: a list one item a line, an object (an extra field the gateway sent) as
    compact JSON, anything else as text."""
    import json

    if isinstance(value, list):
        return "\n".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return str(value)
