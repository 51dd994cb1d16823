"""The SQLite ledger: persistence, one-transaction atomicity, API keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from walletctl.sandbox.store import DuplicateReferenceError, Store

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _tx(store: Store, ref: str, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "merchant_id": "M", "store_id": "S", "reference": ref, "kind": "preauth",
        "type_str": "ecom.preauthorization", "amount": Decimal("12.34"), "currency": "EUR",
        "state": "Approved", "method": "WalletPay", "now": NOW,
    }
    args.update(kw)
    return store.create_transaction(**args)


def test_file_db_survives_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    first = Store(path)
    _tx(first, "R1", billing={"city": "Berlin"}, payer={"apmPayerID": "P1"})
    first.issue_api_key(key="k1", merchant_id="M", store_id="S", expires_at=None, now=NOW)
    first.close()
    second = Store(path)
    [row] = second.lookup("M", "S", "R1")
    assert (row.amount, row.billing, row.payer) == (Decimal("12.34"), {"city": "Berlin"},
                                                   {"apmPayerID": "P1"})
    assert second.is_valid_api_key("k1", "M", "S", NOW)
    second.close()


def test_duplicate_reference_is_refused() -> None:
    store = Store()
    _tx(store, "R1")
    with pytest.raises(DuplicateReferenceError):
        _tx(store, "R1", amount=Decimal(1))
    _tx(store, "R1", store_id="S2")  # another store may reuse it
    assert store.count() == 2


def test_atomic_rolls_back_everything() -> None:
    store = Store()

    def both_then_fail() -> None:
        with store.atomic():
            _tx(store, "R1")
            _tx(store, "R2")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        both_then_fail()
    assert store.ledger() == []


def test_lookup_returns_the_original_and_its_followups() -> None:
    store = Store()
    _tx(store, "R1")
    _tx(store, "R1-C", kind="capture", invoice_reference="R1", amount=Decimal(2))
    _tx(store, "OTHER")
    assert [r.reference for r in store.lookup("M", "S", "R1")] == ["R1", "R1-C"]
    assert [r.reference for r in store.followups("M", "S", "R1")] == ["R1-C"]
    assert store.lookup("M", "OTHER-STORE", "R1") == []


def test_update_and_bad_values() -> None:
    store = Store()
    row = _tx(store, "R1", state="Pending", token="tok", expires_at=NOW + timedelta(seconds=5))
    assert store.find_by_token("tok") == row
    changed = store.update(row.id, now=NOW, state="Expired", token_used=True)
    assert (changed.state, changed.token_used) == ("Expired", True)
    with pytest.raises(ValueError, match="cannot update"):
        store.update(row.id, now=NOW, amount="1")
    with pytest.raises(ValueError, match="kind"):
        _tx(store, "R2", kind="gift")
    with pytest.raises(TypeError, match="Decimal"):
        _tx(store, "R3", amount=1.5)


def test_api_key_rules() -> None:
    store = Store()
    store.issue_api_key(key="k", merchant_id="M", store_id="S",
                        expires_at=NOW + timedelta(minutes=1), now=NOW, encryption_key_id="e1")
    assert store.is_valid_api_key("k", "M", "S", NOW)
    assert not store.is_valid_api_key("k", "M", "OTHER", NOW)
    assert not store.is_valid_api_key("k", "M", "S", NOW + timedelta(minutes=1))
    assert not store.is_valid_api_key("nope", "M", "S", NOW)
    info = store.api_key_info("k")
    assert info is not None
    assert info.extra == {"encryption_key_id": "e1"}
    store.reset()
    assert store.api_key_info("k") is None
