"""The sandbox store's ``transactions`` table: originals and follow-ups, the ledger itself.

Methods of :class:`walletctl.sandbox.store.Store` (each one short transaction):

``store.create_transaction(*, merchant_id, store_id, reference, kind, type_str, amount,
currency, state, method, now, provider_state_code=None, invoice_reference=None,
billing=None, shipping=None, payer=None, checkout=None, token=None, expires_at=None,
provider_transaction_id=None, request_hash=None, response=None, response_status=None)
-> TxRow``
    Store one transaction. ``kind`` is ``sale | preauth | capture | refund | reversal``;
    ``type_str`` the wire type shown on lookup records (e.g. ``ecom.sale``);
    ``amount`` a ``Decimal`` in MAJOR units; ``state`` one of :data:`STATES`;
    ``method`` ``WalletV2`` or ``WalletPay``; ``billing`` / ``shipping`` are dicts with the
    spec's camelCase address keys (2.5); ``payer`` holds the ``apmPayer*`` fields of 2.5
    (``None`` = null payer fields, as on ``Errored`` records). Raises
    :class:`DuplicateReferenceError` when ``(merchant_id, store_id, reference)`` exists.

    A WalletPay authorization stored with ``kind="preauth"`` / ``"sale"``,
    ``state="Approved"`` appears in ``GET /api/v5/apmTransactions`` and accepts
    capture / refund / reversal through ``POST /api/v5/apmTransactions`` with the same
    rules as a redirect-wallet checkout. Use :func:`walletctl.sandbox.engine.apply_followup`
    to run a follow-up from your own routes.

``store.get(merchant_id, store_id, reference) -> TxRow | None``
``store.lookup(merchant_id, store_id, reference) -> list[TxRow]``
    The record with that reference plus every record whose invoice reference is it.
``store.followups(merchant_id, store_id, reference) -> list[TxRow]``
``store.find_by_reference(reference) -> list[TxRow]``  (any merchant; control routes)
``store.find_by_token(token) -> TxRow | None``          (hosted approval page)
``store.update(tx_id, *, now, **columns) -> TxRow``      (state changes)
``store.ledger() -> list[TxRow]``                        (everything, oldest first)
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from walletctl.sandbox.store_db import StoreBase
from walletctl.sandbox.store_rows import (
    KINDS,
    STATES,
    DuplicateReferenceError,
    TxRow,
    dump_json,
    iso_utc,
    parse_dt,
)

TRANSACTIONS_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS transactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    merchant_id TEXT NOT NULL,
    store_id TEXT NOT NULL,
    reference TEXT NOT NULL,
    invoice_reference TEXT,
    kind TEXT NOT NULL,
    type_str TEXT NOT NULL,
    amount TEXT NOT NULL,
    currency TEXT NOT NULL,
    state TEXT NOT NULL,
    provider_state_code TEXT,
    method TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    billing TEXT,
    shipping TEXT,
    payer TEXT,
    checkout TEXT,
    token TEXT UNIQUE,
    token_used INTEGER NOT NULL DEFAULT 0,
    expires_at TEXT,
    provider_transaction_id TEXT,
    request_hash TEXT,
    response TEXT,
    response_status INTEGER,
    UNIQUE (merchant_id, store_id, reference)
);
CREATE INDEX IF NOT EXISTS tx_invoice ON transactions (merchant_id, store_id, invoice_reference);
CREATE INDEX IF NOT EXISTS tx_reference ON transactions (reference);
"""

_JSON_COLUMNS: Final = ("billing", "shipping", "payer", "checkout", "response")
_UPDATABLE: Final = frozenset(
    {
        "state",
        "provider_state_code",
        "billing",
        "shipping",
        "payer",
        "checkout",
        "token_used",
        "expires_at",
        "provider_transaction_id",
        "request_hash",
        "response",
        "response_status",
    }
)


class TransactionsTable(StoreBase):
    """Originals (sale / preauth) and their follow-ups (capture / refund / reversal)."""

    def create_transaction(
        self,
        *,
        merchant_id: str,
        store_id: str,
        reference: str,
        kind: str,
        type_str: str,
        amount: Decimal,
        currency: str,
        state: str,
        method: str,
        now: datetime,
        provider_state_code: str | None = None,
        invoice_reference: str | None = None,
        billing: dict[str, Any] | None = None,
        shipping: dict[str, Any] | None = None,
        payer: dict[str, Any] | None = None,
        checkout: dict[str, Any] | None = None,
        token: str | None = None,
        expires_at: datetime | None = None,
        provider_transaction_id: str | None = None,
        request_hash: str | None = None,
        response: dict[str, Any] | None = None,
        response_status: int | None = None,
        tx_id: str | None = None,
    ) -> TxRow:
        """Store one transaction; see the module docstring."""
        if kind not in KINDS:
            raise ValueError(f"kind: must be one of {', '.join(KINDS)}")
        if state not in STATES:
            raise ValueError(f"state: must be one of {', '.join(STATES)}")
        if not isinstance(amount, Decimal):
            raise TypeError("amount: must be a Decimal")
        tx_id = tx_id or str(uuid.uuid4())
        stamp = iso_utc(now)
        with self.atomic() as conn:
            try:
                conn.execute(
                    "INSERT INTO transactions (id, merchant_id, store_id, reference, "
                    "invoice_reference, kind, type_str, amount, currency, state, "
                    "provider_state_code, method, created_at, updated_at, billing, shipping, "
                    "payer, checkout, token, expires_at, provider_transaction_id, request_hash, "
                    "response, response_status) VALUES "
                    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        tx_id, merchant_id, store_id, reference, invoice_reference, kind,
                        type_str, f"{amount:f}", currency, state, provider_state_code, method,
                        stamp, stamp, dump_json(billing), dump_json(shipping), dump_json(payer),
                        dump_json(checkout), token, iso_utc(expires_at) if expires_at else None,
                        provider_transaction_id, request_hash, dump_json(response),
                        response_status,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                if "reference" in str(exc) or "transactions.merchant_id" in str(exc):
                    raise DuplicateReferenceError(reference) from None
                raise
            row = self._get_by_id(conn, tx_id)
        assert row is not None
        return row

    def update(self, tx_id: str, *, now: datetime, **columns: Any) -> TxRow:
        """Change columns of one row (state, provider_state_code, token_used, ...)."""
        bad = set(columns) - _UPDATABLE
        if bad:
            raise ValueError(f"cannot update {', '.join(sorted(bad))}")
        sets = ["updated_at = ?"]
        values: list[Any] = [iso_utc(now)]
        for name, value in columns.items():
            sets.append(f"{name} = ?")
            if name in _JSON_COLUMNS:
                value = dump_json(value)
            elif name == "expires_at" and value is not None:
                value = iso_utc(value)
            elif name == "token_used":
                value = int(bool(value))
            values.append(value)
        values.append(tx_id)
        with self.atomic() as conn:
            conn.execute(f"UPDATE transactions SET {', '.join(sets)} WHERE id = ?", values)  # noqa: S608
            row = self._get_by_id(conn, tx_id)
        if row is None:
            raise KeyError(tx_id)
        return row

    def get(self, merchant_id: str, store_id: str, reference: str) -> TxRow | None:
        with self.atomic() as conn:
            cur = conn.execute(
                "SELECT * FROM transactions WHERE merchant_id = ? AND store_id = ? "
                "AND reference = ?",
                (merchant_id, store_id, reference),
            )
            found = cur.fetchone()
        return _row(found) if found else None

    def get_by_id(self, tx_id: str) -> TxRow | None:
        with self.atomic() as conn:
            return self._get_by_id(conn, tx_id)

    def lookup(self, merchant_id: str, store_id: str, reference: str) -> list[TxRow]:
        """The record with ``reference`` and every record whose invoice reference is it."""
        with self.atomic() as conn:
            # Two indexed searches: an OR here made SQLite scan all of the merchant's rows,
            # so lookups slowed down as the ledger grew.
            cur = conn.execute(
                "SELECT * FROM transactions WHERE merchant_id = ?1 AND store_id = ?2 "
                "AND reference = ?3 "
                "UNION ALL SELECT * FROM transactions WHERE merchant_id = ?1 AND store_id = ?2 "
                "AND invoice_reference = ?3 AND reference <> ?3 ORDER BY seq",
                (merchant_id, store_id, reference),
            )
            return [_row(r) for r in cur.fetchall()]

    def followups(self, merchant_id: str, store_id: str, reference: str) -> list[TxRow]:
        with self.atomic() as conn:
            cur = conn.execute(
                "SELECT * FROM transactions WHERE merchant_id = ? AND store_id = ? "
                "AND invoice_reference = ? ORDER BY seq",
                (merchant_id, store_id, reference),
            )
            return [_row(r) for r in cur.fetchall()]

    def find_by_reference(self, reference: str) -> list[TxRow]:
        with self.atomic() as conn:
            cur = conn.execute(
                "SELECT * FROM transactions WHERE reference = ? ORDER BY seq", (reference,)
            )
            return [_row(r) for r in cur.fetchall()]

    def find_by_token(self, token: str) -> TxRow | None:
        with self.atomic() as conn:
            found = conn.execute("SELECT * FROM transactions WHERE token = ?", (token,)).fetchone()
        return _row(found) if found else None

    def ledger(self) -> list[TxRow]:
        with self.atomic() as conn:
            return [_row(r) for r in conn.execute("SELECT * FROM transactions ORDER BY seq")]

    def count(self) -> int:
        with self.atomic() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0])

    @staticmethod
    def _get_by_id(conn: sqlite3.Connection, tx_id: str) -> TxRow | None:
        found = conn.execute("SELECT * FROM transactions WHERE id = ?", (tx_id,)).fetchone()
        return _row(found) if found else None


def _row(r: sqlite3.Row) -> TxRow:
    def js(name: str) -> Any:
        raw = r[name]
        return json.loads(raw) if raw is not None else None

    created = parse_dt(r["created_at"])
    updated = parse_dt(r["updated_at"])
    assert created is not None
    assert updated is not None
    return TxRow(
        id=r["id"],
        merchant_id=r["merchant_id"],
        store_id=r["store_id"],
        reference=r["reference"],
        invoice_reference=r["invoice_reference"],
        kind=r["kind"],
        type_str=r["type_str"],
        amount=Decimal(r["amount"]),
        currency=r["currency"],
        state=r["state"],
        provider_state_code=r["provider_state_code"],
        method=r["method"],
        created_at=created,
        updated_at=updated,
        billing=js("billing"),
        shipping=js("shipping"),
        payer=js("payer"),
        checkout=js("checkout"),
        token=r["token"],
        token_used=bool(r["token_used"]),
        expires_at=parse_dt(r["expires_at"]),
        provider_transaction_id=r["provider_transaction_id"],
        request_hash=r["request_hash"],
        response=js("response"),
        response_status=r["response_status"],
    )
