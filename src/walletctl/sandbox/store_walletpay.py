"""The sandbox store's browser-wallet tables (``walletpay_*``), for ``sandbox/walletpay.py``.

Methods of :class:`walletctl.sandbox.store.Store`, each one short transaction
(:meth:`Store.reset` leaves these tables alone, :meth:`Store.reset_walletpay` clears them):

``store.add_walletpay_key(*, key_id, private_pem, merchant_id, store_id, now, keep=False)
-> str``
    Store an encryption / signing key pair (PEM private key) unless ``key_id`` exists; return
    the stored PEM (so the sandbox-level keys are "load or create"). ``keep=True`` rows (the
    static key's encryption key, the wallet's signing keys) survive ``reset_walletpay()``.
``store.walletpay_key(key_id) -> WalletPayKeyRow | None``
``store.add_walletpay_account(*, account_id, merchant_id, store_id, key_id, data, now)``
``store.walletpay_account(account_id) -> WalletPayRow | None``
``store.add_three_ds(*, trans_id, account_id, data, now)``
``store.three_ds(trans_id) -> WalletPayRow | None``
``store.mark_walletpay_used(kind, item_id) -> bool``   (``account`` | ``three_ds``; False if
    already used or unknown: single use holds across threads and restarts)
``store.claim_message_id(message_id, expires_ms, now_ms) -> bool``  (token replay guard)
``store.reset_walletpay()``
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final

from walletctl.sandbox.store_db import StoreBase
from walletctl.sandbox.store_rows import WalletPayKeyRow, WalletPayRow, dump_json, iso_utc

WALLETPAY_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS walletpay_keys (
    key_id TEXT PRIMARY KEY,
    private_pem TEXT NOT NULL,
    merchant_id TEXT,
    store_id TEXT,
    keep INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS walletpay_accounts (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL,
    store_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    data TEXT NOT NULL,
    used INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS walletpay_three_ds (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    data TEXT NOT NULL,
    used INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS walletpay_messages (
    message_id TEXT PRIMARY KEY,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS walletpay_messages_expiry ON walletpay_messages (expires_ms);
"""

# Tables of :meth:`Store.mark_walletpay_used` (never user input in SQL).
_WALLETPAY_USABLE: Final = {"account": "walletpay_accounts", "three_ds": "walletpay_three_ds"}
# Seen token messageIds are forgotten this long after they expired (the expiry check
# refuses them first anyway; the margin covers a sandbox clock moved backwards).
_MESSAGE_MARGIN_MS: Final = 86_400_000


class WalletPayTables(StoreBase):
    """Wallet key pairs, payment accounts, 3DS results and seen token messageIds."""

    def add_walletpay_key(
        self,
        *,
        key_id: str,
        private_pem: str,
        merchant_id: str | None,
        store_id: str | None,
        now: datetime,
        keep: bool = False,
    ) -> str:
        """Store a key pair unless ``key_id`` exists; return the stored PEM."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO walletpay_keys (key_id, private_pem, merchant_id, "
                "store_id, keep, created_at) VALUES (?,?,?,?,?,?)",
                (key_id, private_pem, merchant_id, store_id, int(keep), iso_utc(now)),
            )
            found = conn.execute(
                "SELECT private_pem FROM walletpay_keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        return str(found["private_pem"])

    def walletpay_key(self, key_id: str) -> WalletPayKeyRow | None:
        with self.atomic() as conn:
            found = conn.execute(
                "SELECT * FROM walletpay_keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        if found is None:
            return None
        return WalletPayKeyRow(
            key_id=found["key_id"], private_pem=found["private_pem"],
            merchant_id=found["merchant_id"], store_id=found["store_id"],
        )

    def add_walletpay_account(
        self,
        *,
        account_id: str,
        merchant_id: str,
        store_id: str,
        key_id: str,
        data: dict[str, Any],
        now: datetime,
    ) -> None:
        """Store a payment account (``data``: card type, network, PAN, cryptogram, ...)."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT INTO walletpay_accounts (id, merchant_id, store_id, key_id, data, "
                "created_at) VALUES (?,?,?,?,?,?)",
                (account_id, merchant_id, store_id, key_id, dump_json(data), iso_utc(now)),
            )

    def walletpay_account(self, account_id: str) -> WalletPayRow | None:
        with self.atomic() as conn:
            found = conn.execute(
                "SELECT * FROM walletpay_accounts WHERE id = ?", (account_id,)
            ).fetchone()
        if found is None:
            return None
        return WalletPayRow(
            id=found["id"], parent_id=found["key_id"], data=json.loads(found["data"]),
            used=bool(found["used"]), merchant_id=found["merchant_id"],
            store_id=found["store_id"],
        )

    def add_three_ds(
        self, *, trans_id: str, account_id: str, data: dict[str, Any], now: datetime
    ) -> None:
        """Store a 3DS result for a payment account (``data``: value, ECI, status)."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT INTO walletpay_three_ds (id, account_id, data, created_at) "
                "VALUES (?,?,?,?)",
                (trans_id, account_id, dump_json(data), iso_utc(now)),
            )

    def three_ds(self, trans_id: str) -> WalletPayRow | None:
        with self.atomic() as conn:
            found = conn.execute(
                "SELECT * FROM walletpay_three_ds WHERE id = ?", (trans_id,)
            ).fetchone()
        if found is None:
            return None
        return WalletPayRow(
            id=found["id"], parent_id=found["account_id"], data=json.loads(found["data"]),
            used=bool(found["used"]),
        )

    def mark_walletpay_used(self, kind: str, item_id: str) -> bool:
        """Set the used flag of an account's cryptogram / a 3DS result; False if it was set."""
        table = _WALLETPAY_USABLE.get(kind)
        if table is None:
            raise ValueError(f"kind: must be one of {', '.join(_WALLETPAY_USABLE)}")
        with self.atomic() as conn:
            cur = conn.execute(
                f"UPDATE {table} SET used = 1 WHERE id = ? AND used = 0",  # noqa: S608
                (item_id,),
            )
            return cur.rowcount == 1

    def claim_message_id(self, message_id: str, expires_ms: int, now_ms: int) -> bool:
        """True the first time a token's ``messageId`` is seen, False on a replay."""
        with self.atomic() as conn:
            conn.execute(
                "DELETE FROM walletpay_messages WHERE expires_ms < ?",
                (now_ms - _MESSAGE_MARGIN_MS,),
            )
            cur = conn.execute(
                "INSERT OR IGNORE INTO walletpay_messages (message_id, expires_ms) VALUES (?,?)",
                (message_id, expires_ms),
            )
            return cur.rowcount == 1

    def reset_walletpay(self) -> None:
        """Forget issued keys, payment accounts, 3DS results and seen messageIds."""
        with self.atomic() as conn:
            conn.execute("DELETE FROM walletpay_keys WHERE keep = 0")
            conn.execute("DELETE FROM walletpay_accounts")
            conn.execute("DELETE FROM walletpay_three_ds")
            conn.execute("DELETE FROM walletpay_messages")
