"""The sandbox store's ``api_keys`` table: keys issued by the public key service.

Methods of :class:`walletctl.sandbox.store.Store` (each one short transaction):

``store.issue_api_key(*, key, merchant_id, store_id, expires_at, now, **extra)``
``store.is_valid_api_key(key, merchant_id, store_id, now) -> bool``
``store.api_key_info(key) -> ApiKeyRow | None``
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final

from walletctl.sandbox.store_db import StoreBase
from walletctl.sandbox.store_rows import ApiKeyRow, dump_json, iso_utc, parse_dt

API_KEYS_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS api_keys (
    key TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL,
    store_id TEXT NOT NULL,
    expires_at TEXT,
    created_at TEXT NOT NULL,
    extra TEXT
);
"""


class ApiKeysTable(StoreBase):
    """API keys with their merchant, store and expiry (checked on every authenticated call)."""

    def issue_api_key(
        self,
        *,
        key: str,
        merchant_id: str,
        store_id: str,
        expires_at: datetime | None,
        now: datetime,
        **extra: Any,
    ) -> ApiKeyRow:
        """Record a key issued by the public key service (``extra``: e.g. encryption key id)."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO api_keys (key, merchant_id, store_id, expires_at, "
                "created_at, extra) VALUES (?,?,?,?,?,?)",
                (
                    key, merchant_id, store_id, iso_utc(expires_at) if expires_at else None,
                    iso_utc(now), dump_json(extra) or "{}",
                ),
            )
        info = self.api_key_info(key)
        assert info is not None
        return info

    def api_key_info(self, key: str) -> ApiKeyRow | None:
        with self.atomic() as conn:
            found = conn.execute("SELECT * FROM api_keys WHERE key = ?", (key,)).fetchone()
        if found is None:
            return None
        created = parse_dt(found["created_at"])
        assert created is not None
        return ApiKeyRow(
            key=found["key"],
            merchant_id=found["merchant_id"],
            store_id=found["store_id"],
            expires_at=parse_dt(found["expires_at"]),
            created_at=created,
            extra=json.loads(found["extra"] or "{}"),
        )

    def is_valid_api_key(self, key: str, merchant_id: str, store_id: str, now: datetime) -> bool:
        """An issued key, for this merchant and store, not expired at ``now``."""
        info = self.api_key_info(key)
        if info is None or info.merchant_id != merchant_id or info.store_id != store_id:
            return False
        return info.expires_at is None or now < info.expires_at
