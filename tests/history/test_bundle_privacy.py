"""A per-order bundle holds the order's own events and nothing of any other entry but the
proofs' hashes; its size is the order's, not the history's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from walletctl.history import open_history
from walletctl.history.store import Completion, Filters, Intent
from walletctl.ops.bundle_reader import check_bundle
from walletctl.ops.evidence import write_bundle
from walletctl.ops.order import OrderView


def _intent(ref: str, user: str, amount: str, op: str = "refund") -> Intent:
    return Intent(time="2026-11-02T10:00:00.000Z", os_user=user, host=f"{user}-host",
                  profile="desk", base_url="https://gw.example", operation=op,
                  original_ref=ref, new_ref=f"{ref}-R", amount=amount, currency="EUR",
                  merchant_id="M-1", store_id="S-1")


def test_the_bundle_of_order_1_next_to_2000_others_holds_none_of_them(tmp_path: Path) -> None:
    others = [(f"OTHER-CUSTOMER-{i}", f"clerk{i}x", f"{1000 + i}.77") for i in range(2000)]
    with open_history(tmp_path / "h.sqlite3") as store:
        store.begin_many([_intent(ref, user, amount) for ref, user, amount in others[:1000]])
        for n in range(5):  # ORDER-1: five movements, each completed (ten entries' events)
            entry = store.begin(_intent("ORDER-1", "ann", f"{n + 1}.11",
                                        "checkout" if n == 0 else "refund"))
            store.complete(entry, Completion(time="2026-11-02T10:00:01.000Z",
                                             outcome="approved", http_status=200))
        store.begin_many([_intent(ref, user, amount) for ref, user, amount in others[1000:]])
        view = OrderView(reference="ORDER-1", profile="desk", history=store.where,
                         backend="sqlite", now="2026-11-03T00:00:00.000Z",
                         merchant_id="M-1", store_id="S-1")
        view.entries = list(store.entries(Filters(original_ref="ORDER-1")))
        bundle = tmp_path / "order-1.ndjson"
        written = write_bundle(bundle, store, view, "ann", None)
    text = bundle.read_text()
    assert written.events == 10
    assert len(text.encode()) <= 64 * 1024, len(text)
    for ref, user, amount in others:
        assert ref not in text
        assert user not in text
        assert amount not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["checkpoint"]["size"] == 2010
    assert {e["event"]["original_ref"] for e in lines[1:]
            if e["event"]["kind"] == "begin"} == {"ORDER-1"}
    reading = check_bundle(bundle).reading()
    assert reading["anchored"].startswith("not anchored")
    assert [e["amount"] for e in reading["entries"]] == ["1.11", "2.11", "3.11", "4.11",
                                                         "5.11"]
    assert reading["balance"]["refunded"] == "14.44"


def test_a_bundle_proven_to_a_signed_checkpoint(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from walletctl.ops.evidence import EvidenceError, make_anchor

    keys = {}
    for name in ("desk", "other"):
        key = Ed25519PrivateKey.generate()
        (tmp_path / f"{name}.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        keys[name] = tmp_path / f"{name}.pub.pem"
        keys[name].write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    path = tmp_path / "h.sqlite3"
    monkeypatch.setenv("WALLETCTL_AUDIT_LOG", str(path))
    monkeypatch.delenv("WALLETCTL_HISTORY_URL", raising=False)
    with open_history(path) as store:
        store.begin_many([_intent("ORDER-1", "ann", "1.00"), _intent("ORDER-2", "bob", "2.00")])
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text(json.dumps(make_anchor(None, tmp_path / "desk.pem").to_dict()) + "\n")
    with open_history(path) as store:
        store.begin(_intent("ORDER-3", "cy", "3.00"))  # after the checkpoint
        view = OrderView(reference="ORDER-1", profile="desk", history=store.where,
                         backend="sqlite", now="2026-11-03T00:00:00.000Z",
                         merchant_id="M-1", store_id="S-1")
        view.entries = list(store.entries(Filters(original_ref="ORDER-1")))
        signed, head = tmp_path / "signed.ndjson", tmp_path / "head.ndjson"
        write_bundle(signed, store, view, "ann", anchors)
        write_bundle(head, store, view, "ann", None)
    assert json.loads(signed.read_text().splitlines()[0])["checkpoint"]["size"] == 2
    reading = check_bundle(signed, trust_key=keys["desk"]).reading()
    assert reading["anchored"].startswith("signed by the trusted key")
    assert check_bundle(signed, anchors).reading()["anchored"].startswith("line 1 of")
    with pytest.raises(EvidenceError, match="not the trusted key"):
        check_bundle(signed, trust_key=keys["other"])
    with pytest.raises(EvidenceError, match="is not signed"):
        check_bundle(head, trust_key=keys["desk"])
    with pytest.raises(EvidenceError, match="in no line of"):
        check_bundle(head, anchors)


@pytest.mark.parametrize("amount", ['"sNaN"', '"1e999999999"', '"NaN"', '"-Infinity"',
                                    "1e999999999", "1.5", '"' + "9" * 400 + '"', "9" * 40])
def test_an_odd_number_anywhere_is_exit_3_never_an_internal_error(tmp_path: Path,
                                                                  amount: str) -> None:
    from click.testing import CliRunner

    from walletctl.cli.main import app

    with open_history(tmp_path / "h.sqlite3") as store:
        store.begin(_intent("ORDER-1", "ann", "1.00"))
        view = OrderView(reference="ORDER-1", profile="desk", history=store.where,
                         backend="sqlite", now="2026-11-03T00:00:00.000Z",
                         merchant_id="M-1", store_id="S-1")
        view.entries = list(store.entries(Filters(original_ref="ORDER-1")))
        write_bundle(tmp_path / "b.ndjson", store, view, "ann", None)
    record = ('{"gateway": {"id": "1", "state": "Approved", "currencyCode": "EUR", '
              f'"transactionAmount": {amount}, "clientSystemTransactionId": "ORDER-1-R", '
              '"type": "refund"}, "fetchedAt": "2026-11-03T00:00:00.000Z"}')
    bundle = tmp_path / "odd.ndjson"
    bundle.write_text((tmp_path / "b.ndjson").read_text() + record + "\n")
    result = CliRunner().invoke(app, ["history", "check-evidence", str(bundle)],
                                env={"WALLETCTL_CONFIG": str(tmp_path / "none.toml")})
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    assert "line 3" in result.stderr
