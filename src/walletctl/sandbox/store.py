"""The sandbox's SQLite store: the ledger (``transactions``), the API keys the public key
service issued and the browser wallet's ``walletpay_*`` tables. Every public method is one
short transaction; :meth:`Store.atomic` groups several."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from walletctl.models.operations import LEDGER_KINDS
from walletctl.models.operations import ORIGINAL_KINDS as ORIGINAL_KINDS

KINDS: Final = LEDGER_KINDS
STATES: Final = ("Pending", "Approved", "Errored", "Declined", "Cancelled", "Expired")


class DuplicateReferenceError(Exception):
    """``(merchant_id, store_id, reference)`` is already stored."""


@dataclass(frozen=True)
class TxRow:
    """One stored transaction (original or follow-up); the amount in major units."""

    id: str
    merchant_id: str
    store_id: str
    reference: str
    invoice_reference: str | None
    kind: str
    type_str: str
    amount: Decimal
    currency: str
    state: str
    provider_state_code: str | None
    method: str
    created_at: datetime
    updated_at: datetime
    billing: dict[str, Any] | None = None
    shipping: dict[str, Any] | None = None
    payer: dict[str, Any] | None = None
    checkout: dict[str, Any] | None = None
    token: str | None = None
    token_used: bool = False
    expires_at: datetime | None = None
    provider_transaction_id: str | None = None
    request_hash: str | None = None
    response: dict[str, Any] | None = field(default=None, repr=False)
    response_status: int | None = None


@dataclass(frozen=True)
class ApiKeyRow:
    key: str
    merchant_id: str
    store_id: str
    expires_at: datetime | None
    extra: dict[str, Any]


@dataclass(frozen=True)
class WalletPayKeyRow:
    """A browser-wallet key pair; ``private_pem`` is a sandbox test key (never print it)."""

    key_id: str
    private_pem: str = field(repr=False)
    merchant_id: str | None
    store_id: str | None


@dataclass(frozen=True)
class WalletPayRow:
    """A payment account or a 3DS result: its owner ids, JSON ``data`` and the used flag."""

    id: str
    parent_id: str  # the account's key id / the 3DS result's account id
    data: dict[str, Any] = field(repr=False)
    used: bool
    merchant_id: str | None = None
    store_id: str | None = None


def iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def parse_dt(value: str | None) -> datetime | None:
    """A stored time back (naive text is read as UTC)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def dump_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, default=str, separators=(",", ":"), sort_keys=True)


def _stored(name: str, value: Any) -> Any:
    """A ``transactions`` column's value as stored: dicts as sorted JSON, times as UTC ISO
    8601 text, amounts as decimal text, flags as 0/1."""
    if name in _JSON_COLUMNS:
        return dump_json(value)
    if value is None or type(value) is str:  # most columns: as they are
        return value
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, Decimal):
        return f"{value:f}"
    return int(value) if isinstance(value, bool) else value


_SCHEMA: Final = """
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

CREATE TABLE IF NOT EXISTS api_keys (
    key TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL,
    store_id TEXT NOT NULL,
    expires_at TEXT,
    created_at TEXT NOT NULL,
    extra TEXT
);

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
# The ledger's view of a transaction (``GET /_sandbox/ledger``): its keys and columns.
_LEDGER_VIEW: Final = {
    "id": "id", "merchantId": "merchant_id", "storeId": "store_id", "reference": "reference",
    "invoiceReference": "invoice_reference", "kind": "kind", "type": "type_str",
    "amount": "amount", "currency": "currency", "state": "state",
    "providerStateCode": "provider_state_code", "method": "method",
    "createdAt": "created_at", "updatedAt": "updated_at"}
LEDGER_PAGE: Final = 100  # transactions per read of :meth:`Store.ledger_pages`
# Each transaction's view as compact JSON text, written by SQLite: a page is encoded with
# the GIL released, so the server's event loop never waits for Python to encode one.
_LEDGER_JSON: Final = "json_object(" + ", ".join(
    f"'{key}', {column}" for key, column in _LEDGER_VIEW.items()) + ")"
# Columns of ``transactions`` stored as JSON, and the ones :meth:`Store.update` may change.
_JSON_COLUMNS: Final = frozenset({"billing", "shipping", "payer", "checkout", "response"})
_UPDATABLE: Final = frozenset({
    *_JSON_COLUMNS, "state", "provider_state_code", "token_used", "expires_at",
    "provider_transaction_id", "request_hash", "response_status",
})
# Tables of :meth:`Store.mark_walletpay_used` (never user input in SQL).
_WALLETPAY_USABLE: Final = {"account": "walletpay_accounts", "three_ds": "walletpay_three_ds"}
# Seen token messageIds are forgotten this long after they expired (the expiry check
# refuses them first anyway; the margin covers a sandbox clock moved backwards).
_MESSAGE_MARGIN_MS: Final = 86_400_000


class Store:
    """The sandbox's SQLite store; thread-safe (one connection guarded by a re-entrant lock)."""

    def __init__(self, db_path: str | None = None) -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        self._depth = 0
        target = db_path if db_path else ":memory:"
        self._conn = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=10.0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA busy_timeout = 10000")
        if db_path:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database; a write still running in a worker thread when the server
        stopped is not waited for beyond half a second (it ends with the process)."""
        if self._lock.acquire(timeout=0.5):
            try:
                self._conn.close()
            finally:
                self._lock.release()

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` (nested calls join the outer one)."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._depth -= 1
                if outer:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._conn.execute("COMMIT")

    def _one(self, sql: str, *params: Any) -> sqlite3.Row | None:
        with self.atomic() as conn:
            found: sqlite3.Row | None = conn.execute(sql, params).fetchone()
        return found

    def _execute(self, sql: str, *params: Any) -> int:
        with self.atomic() as conn:
            return conn.execute(sql, params).rowcount

    def _rows(self, sql: str, *params: Any) -> list[TxRow]:
        with self.atomic() as conn:
            return [_row(r) for r in conn.execute(sql, params).fetchall()]

    def reset(self) -> None:
        """Delete every transaction and API key (not the browser-wallet state)."""
        with self.atomic() as conn:
            conn.execute("DELETE FROM transactions")
            conn.execute("DELETE FROM api_keys")

    # ------------------------------------------------------------------- transactions

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
        """Store one transaction (``type_str``: the wire type its records show; ``payer``: the
        2.5 ``apmPayer*`` fields); :class:`DuplicateReferenceError` if the reference exists."""
        columns = {k: v for k, v in locals().items() if k not in ("self", "now", "tx_id")}
        if kind not in KINDS:
            raise ValueError(f"kind: must be one of {', '.join(KINDS)}")
        if state not in STATES:
            raise ValueError(f"state: must be one of {', '.join(STATES)}")
        if not isinstance(amount, Decimal):
            raise TypeError("amount: must be a Decimal")
        tx_id = tx_id or str(uuid.uuid4())
        row = {"id": tx_id, **columns, "created_at": now, "updated_at": now}
        sql = (f"INSERT INTO transactions ({', '.join(row)}) "  # noqa: S608 - fixed names
               f"VALUES ({', '.join('?' * len(row))})")
        with self.atomic() as conn:
            try:
                conn.execute(sql, [_stored(k, v) for k, v in row.items()])
            except sqlite3.IntegrityError as exc:
                if "reference" in str(exc) or "transactions.merchant_id" in str(exc):
                    raise DuplicateReferenceError(reference) from None
                raise
            found = self.get_by_id(tx_id)
        assert found is not None
        return found

    def insert_many(self, rows: list[dict[str, Any]]) -> None:
        """Store whole rows (each with the same columns) in one database transaction, or
        none: :class:`DuplicateReferenceError` naming a reference already stored."""
        if not rows:
            return
        names = list(rows[0])
        values = [[_stored(k, row[k]) for k in names] for row in rows]  # before the lock
        sql = (f"INSERT INTO transactions ({', '.join(names)}) "  # noqa: S608 - fixed names
               f"VALUES ({', '.join('?' * len(names))})")
        try:
            with self.atomic() as conn:
                conn.executemany(sql, values)
            return
        except sqlite3.IntegrityError:
            pass  # rolled back: nothing stored; name a reference already there
        first = rows[0]
        refs = {row["reference"] for row in rows}
        with self.atomic() as conn:
            taken = conn.execute(
                "SELECT reference FROM transactions WHERE merchant_id = ? AND store_id = ?",
                (first["merchant_id"], first["store_id"])).fetchall()
        clash = next((r[0] for r in taken if r[0] in refs), first["reference"])
        raise DuplicateReferenceError(clash)

    def update(self, tx_id: str, *, now: datetime, **columns: Any) -> TxRow:
        """Change columns of one row (state, provider_state_code, token_used, ...)."""
        bad = set(columns) - _UPDATABLE
        if bad:
            raise ValueError(f"cannot update {', '.join(sorted(bad))}")
        changes = {"updated_at": now, **columns}
        sets = ", ".join(f"{name} = ?" for name in changes)
        with self.atomic() as conn:
            conn.execute(f"UPDATE transactions SET {sets} WHERE id = ?",  # noqa: S608
                         [*(_stored(k, v) for k, v in changes.items()), tx_id])
            row = self.get_by_id(tx_id)
        if row is None:
            raise KeyError(tx_id)
        return row

    def _tx(self, where: str, *params: Any) -> TxRow | None:
        found = self._one(f"SELECT * FROM transactions WHERE {where}", *params)  # noqa: S608
        return _row(found) if found else None

    def get(self, merchant_id: str, store_id: str, reference: str) -> TxRow | None:
        return self._tx("merchant_id = ? AND store_id = ? AND reference = ?",
                        merchant_id, store_id, reference)

    def get_by_id(self, tx_id: str) -> TxRow | None:
        return self._tx("id = ?", tx_id)

    def lookup(self, merchant_id: str, store_id: str, reference: str) -> list[TxRow]:
        """The record with ``reference`` and every record whose invoice reference is it."""
        # Two indexed searches: an OR here made SQLite scan all of the merchant's rows,
        # so lookups slowed down as the ledger grew.
        return self._rows(
            "SELECT * FROM transactions WHERE merchant_id = ?1 AND store_id = ?2 "
            "AND reference = ?3 "
            "UNION ALL SELECT * FROM transactions WHERE merchant_id = ?1 AND store_id = ?2 "
            "AND invoice_reference = ?3 AND reference <> ?3 ORDER BY seq",
            merchant_id, store_id, reference,
        )

    def followups(self, merchant_id: str, store_id: str, reference: str) -> list[TxRow]:
        return self._rows(
            "SELECT * FROM transactions WHERE merchant_id = ? AND store_id = ? "
            "AND invoice_reference = ? ORDER BY seq",
            merchant_id, store_id, reference,
        )

    def find_by_reference(self, reference: str) -> list[TxRow]:
        """Any merchant's (the control routes)."""
        return self._rows("SELECT * FROM transactions WHERE reference = ? ORDER BY seq",
                          reference)

    def find_by_token(self, token: str) -> TxRow | None:
        return self._tx("token = ?", token)

    def ledger(self) -> list[TxRow]:
        """Everything, oldest first."""
        return self._rows("SELECT * FROM transactions ORDER BY seq")

    def ledger_pages(self, page: int = LEDGER_PAGE) -> Generator[list[str], None, None]:
        """The ``GET /_sandbox/ledger`` view of every transaction stored when the read began,
        oldest first, as compact JSON objects, ``page`` at a time; each page is one short read
        by ``seq``, so other requests are served between pages."""
        top = self._one("SELECT MAX(seq) FROM transactions")
        last, after = (top[0] if top else None) or 0, 0
        while after < last:
            with self._lock:
                cursor = self._conn.cursor()
                cursor.row_factory = None  # plain tuples: nothing per row but the text
                rows = cursor.execute(
                    f"SELECT seq, {_LEDGER_JSON} FROM transactions "  # noqa: S608 - fixed names
                    "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                    (after, last, page)).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            yield [row[1] for row in rows]

    def count(self) -> int:
        found = self._one("SELECT COUNT(*) FROM transactions")
        assert found is not None
        return int(found[0])

    # ------------------------------------------------------------------- api_keys

    def issue_api_key(
        self,
        *,
        key: str,
        merchant_id: str,
        store_id: str,
        expires_at: datetime | None,
        now: datetime,
        **extra: Any,
    ) -> None:
        """Record a key issued by the public key service (``extra``: e.g. encryption key id)."""
        self._execute(
            "INSERT OR REPLACE INTO api_keys (key, merchant_id, store_id, expires_at, "
            "created_at, extra) VALUES (?,?,?,?,?,?)",
            key, merchant_id, store_id, iso_utc(expires_at) if expires_at else None,
            iso_utc(now), dump_json(extra) or "{}",
        )

    def api_key_info(self, key: str) -> ApiKeyRow | None:
        found = self._one("SELECT * FROM api_keys WHERE key = ?", key)
        return None if found is None else ApiKeyRow(
            found["key"], found["merchant_id"], found["store_id"],
            parse_dt(found["expires_at"]), json.loads(found["extra"] or "{}"))

    def is_valid_api_key(self, key: str, merchant_id: str, store_id: str, now: datetime) -> bool:
        """An issued key, for this merchant and store, not expired at ``now``."""
        info = self.api_key_info(key)
        if info is None or info.merchant_id != merchant_id or info.store_id != store_id:
            return False
        return info.expires_at is None or now < info.expires_at

    # ------------------------------------------------------------------- walletpay_*

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
        """Store a key pair unless ``key_id`` exists; the stored PEM ("load or create").
        ``keep=True`` rows survive :meth:`reset_walletpay`."""
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
        found = self._one("SELECT * FROM walletpay_keys WHERE key_id = ?", key_id)
        return None if found is None else WalletPayKeyRow(
            found["key_id"], found["private_pem"], found["merchant_id"], found["store_id"])

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
        self._execute(
            "INSERT INTO walletpay_accounts (id, merchant_id, store_id, key_id, data, "
            "created_at) VALUES (?,?,?,?,?,?)",
            account_id, merchant_id, store_id, key_id, dump_json(data), iso_utc(now),
        )

    def walletpay_account(self, account_id: str) -> WalletPayRow | None:
        found = self._one("SELECT * FROM walletpay_accounts WHERE id = ?", account_id)
        return None if found is None else WalletPayRow(
            found["id"], found["key_id"], json.loads(found["data"]), bool(found["used"]),
            found["merchant_id"], found["store_id"])

    def add_three_ds(
        self, *, trans_id: str, account_id: str, data: dict[str, Any], now: datetime
    ) -> None:
        """Store a 3DS result for a payment account (``data``: value, ECI, status)."""
        self._execute(
            "INSERT INTO walletpay_three_ds (id, account_id, data, created_at) VALUES (?,?,?,?)",
            trans_id, account_id, dump_json(data), iso_utc(now),
        )

    def three_ds(self, trans_id: str) -> WalletPayRow | None:
        found = self._one("SELECT * FROM walletpay_three_ds WHERE id = ?", trans_id)
        return None if found is None else WalletPayRow(
            found["id"], found["account_id"], json.loads(found["data"]), bool(found["used"]))

    def mark_walletpay_used(self, kind: str, item_id: str) -> bool:
        """Set the used flag of an ``account`` or a ``three_ds`` result; False if it was set
        or is unknown."""
        table = _WALLETPAY_USABLE.get(kind)
        if table is None:
            raise ValueError(f"kind: must be one of {', '.join(_WALLETPAY_USABLE)}")
        sql = f"UPDATE {table} SET used = 1 WHERE id = ? AND used = 0"  # noqa: S608
        return self._execute(sql, item_id) == 1

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


def _row(r: sqlite3.Row) -> TxRow:
    data = dict(zip(r.keys(), r, strict=True))
    del data["seq"]
    for name in _JSON_COLUMNS:
        data[name] = json.loads(data[name]) if data[name] is not None else None
    for name in ("created_at", "updated_at", "expires_at"):
        data[name] = parse_dt(data[name])
    return TxRow(**{**data, "amount": Decimal(data["amount"]),
                    "token_used": bool(data["token_used"])})
