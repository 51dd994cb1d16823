"""Issue 21: a reference the wallet takes is taken at every later step, and 3DS from the CLI.

On a sandbox on a real loopback port, the merchant server's side of a browser payment is
done over HTTP the way ``walletpay.js`` does it (public keys, the emulated wallet's token,
Create Payment Account with the order's reference); then the real CLI authorizes a
pre-authorisation, captures, refunds and reverses it (derived references and ``--new-ref``)
and looks it up, with references holding a space, '#', 'ä' and 64 characters. The references
must come back intact in JSON, CSV, the table, the history and a batch journal.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli_runner import run_walletctl
from walletctl.models.fields import REFERENCE_RULE
from walletpay.conftest import SERVER_AUTH

MERCHANT, STORE = "M-1001", "S-01"
BASIC = "Basic " + base64.b64encode(b"ops-bot:sandbox-secret").decode()
LONG = "Lange Bestellung ä #" + "0" * 43 + "9"  # 64 code points, 66 UTF-8 bytes
PAID = ["pre order 002606", "#1001", "Bestellung-ä-7", LONG]
REVERSED = ["rev order 002606", "#1002 rev", "Rücknahme-ä-8", "R" + LONG[1:]]


def _new_ref(ref: str, what: str) -> str:
    return f"{ref[:50]} {what} #ä"


class Merchant:
    """The merchant server and the page's script, over HTTP (what walletpay.js sends)."""

    def __init__(self, url: str) -> None:
        self.url = url
        resp = httpx.post(f"{url}/api/v5/publicKeys", headers={"Authorization": BASIC},
                          json={"merchantId": MERCHANT, "storeId": STORE})
        assert resp.status_code == 200, resp.text
        self.keys: dict[str, Any] = resp.json()
        self.auth = {"Authorization": f"PublicApiKey {self.keys['apiKey']}"}

    def create_account(self, ref: str, card: str) -> httpx.Response:
        token = httpx.post(f"{self.url}/_sandbox/wallet/token", json={
            "cardId": card, "gatewayMerchantId": MERCHANT,
            "publicKeyApi": self.keys["apiKey"]})
        assert token.status_code == 200, token.text
        return httpx.post(f"{self.url}/api/v5/paymentAccounts", headers=self.auth, json={
            "merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": ref,
            "paymentData": {"apiVersion": 2, "apiVersionMinor": 0,
                            "paymentMethodData": token.json()["paymentMethodData"]}})

    def pay(self, ref: str, card: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
        """event.detail of a paid order, as a file for ``authorize --event``."""
        resp = self.create_account(ref, card)
        assert resp.status_code == 200, resp.text
        account = resp.json()
        detail = {"clientSystemTransactionId": ref,
                  "transactionAccountId": account["transactionAccountId"],
                  "transactionMethod": "WalletPay"}
        if "cryptogram" in account:
            detail.update(cryptogram=account["cryptogram"], eciIndicator=account["eciIndicator"])
        path = tmp_path / f"event-{len(list(tmp_path.glob('event-*')))}.json"
        path.write_text(json.dumps(detail, ensure_ascii=False), encoding="utf-8")
        return path, detail


@pytest.fixture(scope="module")
def merchant(sandbox: Any) -> Merchant:
    return Merchant(sandbox.url)


def _authorize(cli: Any, merchant: Merchant, event: Path, amount: str,
               hidden: tuple[str, ...]) -> dict[str, Any]:
    tx: dict[str, Any] = cli("authorize", "--event", str(event), "--type", "preauth",
                             "--amount", amount, "--yes", "--encryption-key-id",
                             merchant.keys["encryptionKeyId"], hidden=hidden)
    return tx


def test_references_the_wallet_takes_are_captured_refunded_reversed_and_looked_up(
        cli: Any, merchant: Merchant, sandbox: Any, tmp_path: Path) -> None:
    for ref in PAID:
        event, detail = merchant.pay(ref, "mc-token", tmp_path)
        tx = _authorize(cli, merchant, event, "20.00", (detail["cryptogram"],))
        assert (tx["state"], tx["clientSystemTransactionId"]) == ("Approved", ref), tx
        first = cli("capture", ref, "--amount", "5.00", "--yes")
        assert first["state"] == "Approved", first
        derived = first["clientSystemTransactionId"]
        assert derived.startswith(ref[:40]), derived
        assert derived.endswith("-CAP1"), derived
        assert len(derived) <= 64
        second = cli("capture", ref, "--amount", "4.00", "--yes",
                     "--new-ref", _new_ref(ref, "cap"))
        assert second["clientSystemTransactionId"] == _new_ref(ref, "cap")
        cli("refund", ref, "--amount", "3.00", "--yes")
        cli("refund", ref, "--amount", "2.00", "--yes", "--new-ref", _new_ref(ref, "ref"))
        records = cli("lookup", ref)
        assert sorted(r["clientSystemTransactionId"] for r in records) == sorted(
            [ref, derived, _new_ref(ref, "cap"), _new_ref(ref, "ref"),
             next(r["clientSystemTransactionId"] for r in records
                  if r["clientSystemTransactionId"].endswith("-REF1"))])
        assert {r["state"] for r in records} == {"Approved"}, records
    for n, ref in enumerate(REVERSED):
        event, detail = merchant.pay(ref, "mc-token", tmp_path)
        _authorize(cli, merchant, event, "7.50", (detail["cryptogram"],))
        extra = ("--new-ref", _new_ref(ref, "rev")) if n % 2 else ()
        reversal = cli("reverse", ref, "--yes", *extra)
        assert reversal["state"] == "Approved", reversal
        if extra:
            assert reversal["clientSystemTransactionId"] == extra[1]
        assert {r["state"] for r in cli("lookup", ref)} == {"Approved"}
    # the sandbox's ledger holds exactly these references (nothing mangled on the way)
    ledger = httpx.get(f"{sandbox.url}/_sandbox/ledger").json()["transactions"]
    originals = {t["reference"] for t in ledger if t["invoiceReference"] is None}
    assert set(PAID) | set(REVERSED) <= originals


@pytest.mark.slow
def test_the_references_survive_every_output_and_the_history(
        cli: Any, merchant: Merchant, tmp_path: Path) -> None:
    ref = "Kasse 3 #ä 0042"
    event, detail = merchant.pay(ref, "mc-token", tmp_path)
    _authorize(cli, merchant, event, "9.00", (detail["cryptogram"],))
    cli("capture", ref, "--amount", "4.00", "--yes")
    batch = tmp_path / "rows.csv"
    batch.write_text(f'ref,amount,currency\n"{ref}",5.00,EUR\n', encoding="utf-8")
    done = cli("capture", "--batch", str(batch), "--yes")
    assert done is not None
    # CSV and table output of lookup, and the history in every format
    from click.testing import CliRunner

    from walletctl.cli.main import app as cli_app

    config = str(next(tmp_path.glob("profiles.toml")))
    runner = CliRunner()

    def raw(*args: str) -> str:
        result = runner.invoke(cli_app, ["--config", config, *args])
        assert result.exit_code == 0, result.stdout + result.stderr
        return result.stdout

    rows = list(csv.DictReader(io.StringIO(raw("-o", "csv", "lookup", ref))))
    assert ref in {r["clientSystemTransactionId"] for r in rows}, rows
    assert ref in raw("-o", "table", "lookup", ref)
    assert f"{ref}-CAP1" in raw("-o", "table", "lookup", ref)
    history = json.loads(raw("-o", "json", "history"))
    entries = history if isinstance(history, list) else history.get("entries", history)
    assert ref in json.dumps(entries, ensure_ascii=False)
    assert ref in raw("-o", "csv", "history")
    assert ref in raw("-o", "table", "history")
    journal = next(tmp_path.glob("*.journal"))
    assert ref in journal.read_bytes().decode("utf-8", "replace") or \
        _journal_refs(journal) >= {ref}


def _journal_refs(path: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT ref FROM rows")}


@pytest.mark.parametrize(("ref", "why"), [
    ("pre order ", "ends with a space"), (" pre order", "starts with a space"),
    ("tab\there", "U+0009"), ("x" * 65, "is 65 characters long"),
    ("zero\u200bwidth", "U+200B"), ("nbsp\u00a0here", "U+00A0"),
])
def test_a_reference_outside_the_rule_is_refused_at_the_first_step(
        merchant: Merchant, sandbox: Any, ref: str, why: str) -> None:
    """Raw HTTP: checkout, Create Payment Account, the authorization and a lookup refuse it
    with 400, naming the field and the rule; nothing is stored."""
    url = sandbox.url
    key = {"Authorization": "PublicApiKey sandbox-api-key"}
    checkout = httpx.post(f"{url}/api/v5/checkout", headers=key, json={
        "merchantId": MERCHANT, "storeId": STORE, "userId": "ops-bot", "type": "ecom.sale",
        "amount": 1234, "currencyCode": "EUR", "clientSystemTransactionId": ref,
        "checkoutDetails": {"paymentMethod": "WalletV2"},
        "redirectDetails": {"returnUrl": "https://shop.example/r"}})
    account = merchant.create_account(ref, "mc-token")
    good = merchant.create_account("good account", "mc-token")
    assert good.status_code == 200, good.text
    auth = httpx.post(f"{url}/api/v5/transactions", headers=SERVER_AUTH, json={
        "merchantId": MERCHANT, "storeId": STORE, "userId": "ops-bot",
        "type": "ecom.preauthorization", "amount": 100, "currencyCode": "EUR",
        "clientSystemTransactionId": ref,
        "transactionAccountId": good.json()["transactionAccountId"],
        "encryptionKeyId": merchant.keys["encryptionKeyId"],
        "cryptogram": good.json()["cryptogram"], "eciIndicator": good.json()["eciIndicator"]})
    lookup = httpx.get(f"{url}/api/v5/apmTransactions", headers=key, params={
        "merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": ref})
    demo = httpx.get(f"{url}/demo/merchant/api/session", params={"ref": ref})
    for name, resp in (("checkout", checkout), ("account", account), ("authorization", auth),
                       ("lookup", lookup), ("demo order", demo)):
        assert resp.status_code == 400, (name, resp.status_code, resp.text)
        message = resp.json()["details"]["message"]
        assert why in message, (name, message)
        assert REFERENCE_RULE in message, (name, message)
        assert "clientSystemTransactionId" in message or name == "demo order", (name, message)
    ledger = httpx.get(f"{url}/_sandbox/ledger").json()["transactions"]
    assert ref not in {t["reference"] for t in ledger}


# -- 3DS from the CLI ---------------------------------------------------------------------------


def _walletctl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_walletctl(["--config", str(config), *args],
                         env={**os.environ, "PYTHONIOENCODING": "utf-8"})


@pytest.mark.parametrize(("result", "state", "code"), [("pass", "Approved", 0),
                                                        ("fail", "Declined", 5)])
def test_sandbox_3ds_output_is_what_authorize_takes(
        cli: Any, merchant: Merchant, tmp_path: Path, result: str, state: str,
        code: int) -> None:
    """A PAN_ONLY account: `walletctl sandbox 3ds ACCOUNT --result R | walletctl authorize
    --3ds - ...` in a real shell pipe; pass is Approved, fail is Declined (AuthenticationFailed).
    """
    ref = f"3DS Bestellung ä #{result}"
    resp = merchant.create_account(ref, "visa-pan")
    assert resp.status_code == 200, resp.text
    account = resp.json()["transactionAccountId"]
    assert resp.json()["cardType"] == "Card"
    config = next(tmp_path.glob("profiles.toml"))
    three = _walletctl(config, "sandbox", "3ds", account, "--result", result)
    assert three.returncode == 0, three.stderr
    answer = json.loads(three.stdout)  # not a terminal: JSON
    assert answer["transactionAccountId"] == account
    assert answer["transStatus"] == ("Y" if result == "pass" else "N")
    command = (f"{sys.executable} -m walletctl --config {config} sandbox 3ds {account} "
               f"--result {result} | {sys.executable} -m walletctl --config {config} -o json "
               f"authorize --3ds - --ref '{ref}' --amount 12.34 --yes --encryption-key-id "
               f"{merchant.keys['encryptionKeyId']}")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"}, check=False)
    assert done.returncode == code, done.stdout + done.stderr
    tx = json.loads(done.stdout)
    assert (tx["state"], tx["clientSystemTransactionId"], tx["transactionAccountId"]) == (
        state, ref, account), tx
    assert "4111111111111111" not in done.stdout + done.stderr
    if result == "pass":
        assert [r["state"] for r in cli("lookup", ref)] == ["Approved"]
    else:
        assert "AuthenticationFailed" in done.stderr + done.stdout


def test_sandbox_3ds_in_every_format_and_its_refusals(
        cli: Any, merchant: Merchant, tmp_path: Path) -> None:
    account = merchant.create_account("3ds formats", "visa-pan").json()["transactionAccountId"]
    config = next(tmp_path.glob("profiles.toml"))
    table = _walletctl(config, "-o", "table", "sandbox", "3ds", account)
    assert table.returncode == 0, table.stderr
    assert f"3DS passed for {account}: transStatus Y" in table.stdout
    nd = _walletctl(config, "-o", "ndjson", "sandbox", "3ds", account, "--result", "fail")
    assert json.loads(nd.stdout)["transStatus"] == "N"
    as_csv = _walletctl(config, "-o", "csv", "sandbox", "3ds", account)
    (row,) = csv.DictReader(io.StringIO(as_csv.stdout))
    assert row["transStatus"] == "Y"
    assert "authenticationValue" not in table.stdout  # people get no authentication value
    bad = _walletctl(config, "sandbox", "3ds", account, "--result", "maybe")
    assert bad.returncode == 2, bad.stderr
    assert "--result: must be pass or fail" in bad.stderr
    token = merchant.create_account("3ds token", "mc-token").json()["transactionAccountId"]
    refused = _walletctl(config, "sandbox", "3ds", token)
    assert refused.returncode != 0
    assert "ThreeDSecureNotNeeded" in refused.stderr or "Token account" in refused.stderr
    unknown = _walletctl(config, "sandbox", "3ds", "ta_unknown")
    assert unknown.returncode != 0
    assert "ta_unknown" in unknown.stderr
