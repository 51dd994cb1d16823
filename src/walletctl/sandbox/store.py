"""The sandbox ledger: every transaction the sandbox knows, in SQLite (:class:`Store`).

One table of transactions (originals and follow-ups), one table of API keys issued by the
public key service, and the browser wallet's ``walletpay_*`` tables. Every public method runs
in ONE short ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction; :meth:`Store.atomic` groups
several calls into one (it is re-entrant: a method called inside ``atomic()`` joins the outer
transaction).

Persistence: ``Store(path)`` opens (or creates) a file DB in WAL mode, so a restarted
sandbox with the same ``--db`` keeps everything; ``Store(None)`` is a private in-memory DB.

Public API (used by the app and by the browser-wallet module ``sandbox/walletpay.py``)
----------------------------------------------------------------------------------------
:class:`Store` is assembled from one part per group of tables; each module documents its
methods:

* :mod:`walletctl.sandbox.store_transactions` - ``create_transaction`` (every argument
  explained there), ``get``, ``get_by_id``, ``lookup``, ``followups``, ``find_by_reference``,
  ``find_by_token``, ``update``, ``ledger``, ``count``;
* :mod:`walletctl.sandbox.store_api_keys` - ``issue_api_key``, ``is_valid_api_key``,
  ``api_key_info``;
* :mod:`walletctl.sandbox.store_walletpay` - browser-wallet keys, payment accounts, 3DS
  results, token messageIds, ``reset_walletpay``;
* :mod:`walletctl.sandbox.store_db` - the connection, ``atomic()``, ``close()``;
* :mod:`walletctl.sandbox.store_rows` - the row types they return (``TxRow``, ...), kinds and
  states, :class:`DuplicateReferenceError`.

``store.reset()`` (here) deletes every transaction and API key (not the browser-wallet state).
"""

from __future__ import annotations

from typing import ClassVar

from walletctl.sandbox.store_api_keys import API_KEYS_SCHEMA, ApiKeysTable
from walletctl.sandbox.store_rows import DuplicateReferenceError
from walletctl.sandbox.store_transactions import TRANSACTIONS_SCHEMA, TransactionsTable
from walletctl.sandbox.store_walletpay import WALLETPAY_SCHEMA, WalletPayTables

__all__ = ["DuplicateReferenceError", "Store"]


class Store(TransactionsTable, ApiKeysTable, WalletPayTables):
    """SQLite-backed ledger; thread-safe (one connection guarded by a re-entrant lock)."""

    SCHEMA: ClassVar[str] = TRANSACTIONS_SCHEMA + API_KEYS_SCHEMA + WALLETPAY_SCHEMA

    def reset(self) -> None:
        with self.atomic() as conn:
            conn.execute("DELETE FROM transactions")
            conn.execute("DELETE FROM api_keys")
