"""``walletctl keys | account | authorize`` against the sandbox in process (transport injection).

Every test also checks that no secret, full PAN or cryptogram reaches stdout or stderr.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from walletctl.cli.main import app as cli_app
from walletctl.cli.state import ENV
from walletctl.constants import ExitCode

SERVICE_ENV = "WALLETCTL_TEST_SERVICE_SECRET"
KEY_ENV = "WALLETCTL_TEST_KEY"
STATIC_KEY = "sandbox-api-key"
SERVICE_SECRET = "sandbox-secret"
PANS = ("4111111111111111", "5204740000001002", "4000000000000002")


def _profile(tmp_path: Path) -> Path:
    text = f"""default_profile = "sandbox"

[profiles.sandbox]
base_url = "http://testserver"
merchant_id = "M-1001"
store_id = "S-01"
user_id = "ops-bot"
amount_format = "minor"
currency = "EUR"
timeout = 10

[profiles.sandbox.auth]
scheme = "PublicApiKey"
key_env = "{KEY_ENV}"
service_secret_env = "{SERVICE_ENV}"
"""
    path = tmp_path / "profiles.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return path


class Cli:
    def __init__(self, config: Path, client: Any) -> None:
        self.config = config
        self.client = client
        self.runner = CliRunner()
        self.secrets: list[str] = [SERVICE_SECRET, *PANS]

    def __call__(self, *args: str, input: str | None = None,
                 expect: int = 0) -> Any:
        result = self.runner.invoke(cli_app, ["--config", str(self.config), *args], input=input)
        text = result.stdout + result.stderr
        assert result.exit_code == expect, f"exit {result.exit_code}: {text}"
        for secret in self.secrets:
            assert secret not in text, f"a secret or card number leaked: {args}"
        return result

    def json(self, *args: str, **kw: Any) -> Any:
        return json.loads(self("-o", "json", *args, **kw).stdout)


@pytest.fixture
def cli(tmp_path: Path, app: FastAPI, client: Any, monkeypatch: pytest.MonkeyPatch
        ) -> Cli:
    monkeypatch.setenv(KEY_ENV, STATIC_KEY)
    monkeypatch.setenv(SERVICE_ENV, SERVICE_SECRET)
    ENV.transport = client._transport
    return Cli(_profile(tmp_path), client)


def _issued_keys(cli: Cli) -> dict[str, Any]:
    """The cached keys, read the way a user would (--show-secret)."""
    data: dict[str, Any] = cli.json("keys", "--show-secret")
    return data


def _make_account(cli: Cli, keys: dict[str, Any], card: str, ref: str = "wp-1") -> dict[str, Any]:
    c = cli.client
    pmd = c.post("/_sandbox/wallet/token", json={
        "cardId": card, "gatewayMerchantId": "M-1001", "publicKeyApi": keys["apiKey"]}).json()
    resp = c.post("/api/v5/paymentAccounts",
                  headers={"Authorization": f"PublicApiKey {keys['apiKey']}"},
                  json={"merchantId": "M-1001", "storeId": "S-01",
                        "clientSystemTransactionId": ref, "paymentData": pmd})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _event(tmp_path: Path, created: dict[str, Any], ref: str = "wp-1") -> Path:
    detail = {"clientSystemTransactionId": ref,
              "transactionAccountId": created["transactionAccountId"],
              "transactionMethod": "WalletPay"}
    if "cryptogram" in created:
        detail.update(cryptogram=created["cryptogram"], eciIndicator=created["eciIndicator"])
    path = tmp_path / f"event-{ref}.json"
    path.write_text(json.dumps(detail))
    return path


def test_keys_are_masked_cached_and_refreshed(cli: Cli) -> None:
    first = cli.json("keys")
    assert first["source"] == "gateway"
    assert first["apiKey"].startswith("****(sha256:"), first
    assert first["encryptionKey"].startswith("****(sha256:")
    assert first["encryptionKeyId"].startswith("ek_")
    full = _issued_keys(cli)
    assert full["source"] == "cache"
    assert full["apiKey"].startswith("pk_")
    assert full["encryptionKeyId"] == first["encryptionKeyId"]
    cli.secrets += [full["apiKey"], full["encryptionKey"]]
    table = cli("-o", "table", "keys").stdout
    assert "sha256:" in table
    assert "encryptionKeyId" in table
    refreshed = cli.json("keys", "--refresh")
    assert refreshed["source"] == "gateway"
    assert refreshed["encryptionKeyId"] != first["encryptionKeyId"]
    cache_files = list((Path(os.environ["XDG_CACHE_HOME"]) / "walletctl" / "keys").iterdir())
    assert len(cache_files) == 1
    assert stat.S_IMODE(cache_files[0].stat().st_mode) == 0o600


def test_keys_save_stores_them_privately(cli: Cli) -> None:
    out = cli.json("keys", "--save")
    assert len(out["saved"]) == 2
    saved = cli.config.parent / "sandbox.key"
    assert saved.exists(), out
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    cli.secrets.append(saved.read_text().strip())
    cli("keys")  # the saved value never shows


def test_keys_with_a_wrong_service_secret_is_an_auth_error(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SERVICE_ENV, "wrong-secret")
    cli.secrets.append("wrong-secret")
    result = cli("keys", expect=ExitCode.AUTH)
    assert "401" in result.stderr


def test_account_is_rendered_masked(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    cli.secrets += [keys["apiKey"], keys["encryptionKey"]]
    created = _make_account(cli, keys, "visa-pan")
    acct = cli.json("account", created["transactionAccountId"])  # key id from the cache
    assert acct["cardType"] == "Card"
    assert acct["authMethod"] == "PAN_ONLY"
    assert acct["maskedCardNumber"] == "411111******1111"
    assert acct["cardNetwork"] == "VISA"
    table = cli("-o", "table", "account", "--event", str(_event(tmp_path, created))).stdout
    assert "411111******1111" in table
    piped = cli.json("account", "--event", "-", input=_event(tmp_path, created).read_text())
    assert piped["transactionAccountId"] == created["transactionAccountId"]


def test_account_refusals(cli: Cli, tmp_path: Path) -> None:
    cli("account", "ta_x", expect=ExitCode.USAGE)  # no key id, nothing cached
    keys = _issued_keys(cli)
    cli.secrets += [keys["apiKey"], keys["encryptionKey"]]
    created = _make_account(cli, keys, "visa-pan")
    result = cli("account", created["transactionAccountId"], "--encryption-key-id", "ek_other",
                 expect=ExitCode.AUTH)
    assert "encryptionKeyId" in result.stderr
    cli("account", "ta_unknown", expect=ExitCode.DECLINED)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"code": "PaymentDataTampered", "description": "BusinessRuleError",
                               "details": {"message": "paymentData: signature"}}))
    result = cli("account", "--event", str(bad), expect=ExitCode.DECLINED)
    assert "gateway error" in result.stderr


def test_authorize_token_account_from_event_then_lookup(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "mc-token", ref="order-7")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"], created["cryptogram"]]
    event = _event(tmp_path, created, ref="order-7")
    dry = cli.json("authorize", "--event", str(event), "--amount", "12.34", "--dry-run")
    body = dry["request"]["body"]
    assert body["amount"] == "1234"
    assert body["cryptogram"].startswith("****")
    assert body["clientSystemTransactionId"] == "order-7"
    cli("authorize", "--event", str(event), "--amount", "12.34", expect=ExitCode.USAGE)  # no --yes
    tx = cli.json("authorize", "--event", str(event), "--amount", "12.34", "--type", "preauth",
                  "--yes")
    assert tx["state"] == "Approved", tx
    assert tx["type"] == "ecom.preauthorization"
    assert tx["amount"] == "12.34"
    records = cli.json("lookup", "order-7")
    assert [r["state"] for r in records] == ["Approved"], records
    # the follow-ups of the redirect wallet work on it with the same rules
    cli("capture", "order-7", "--amount", "20.00", "--yes", expect=ExitCode.DECLINED)
    cli("capture", "order-7", "--amount", "10.00", "--yes")
    states = [(r["type"], r["state"]) for r in cli.json("lookup", "order-7")]
    assert len(states) == 2, states
    assert all(state == "Approved" for _, state in states), states
    # the cryptogram is single-use: a second authorization is refused by the gateway
    cli("authorize", "--event", str(event), "--amount", "1.00", "--ref", "order-8", "--yes",
        expect=ExitCode.DECLINED)


def test_card_account_without_3ds_is_refused_before_sending(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    cli.secrets += [keys["apiKey"], keys["encryptionKey"]]
    created = _make_account(cli, keys, "visa-pan")
    result = cli("authorize", "--account", created["transactionAccountId"], "--amount", "5",
                 "--ref", "card-1", "--yes", expect=ExitCode.VALIDATION)
    assert "threeDSecure" in result.stderr
    cli("lookup", "card-1", expect=ExitCode.DECLINED)  # 404: nothing was sent
    three = cli.client.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": created["transactionAccountId"], "merchantId": "M-1001",
        "storeId": "S-01"}).json()
    cli.secrets.append(three["authenticationValue"])
    tds = tmp_path / "3ds.json"
    tds.write_text(json.dumps(three))
    tx = cli.json("authorize", "--account", created["transactionAccountId"], "--amount", "5",
                  "--ref", "card-1", "--3ds", str(tds), "--yes")
    assert tx["state"] == "Approved"
    assert tx["cardType"] == "Card"
    assert cli.json("lookup", "card-1")[0]["state"] == "Approved"


def test_declined_authorization_exits_declined(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    cli.secrets += [keys["apiKey"], keys["encryptionKey"]]
    created = _make_account(cli, keys, "visa-decline")
    three = cli.client.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": created["transactionAccountId"], "merchantId": "M-1001",
        "storeId": "S-01"}).json()
    result = cli("authorize", "--account", created["transactionAccountId"], "--amount", "5",
                 "--ref", "dec-1", "--3ds", "-", "--yes", input=json.dumps(three),
                 expect=ExitCode.DECLINED)
    assert "Declined" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--amount", "12.345"], "--amount"),
        (["--amount", "-1"], "--amount"),
        (["--amount", "1", "--currency", "XYZ"], "--currency"),
        (["--amount", "1", "--type", "refund"], "--type"),
    ],
)
def test_authorize_bad_flags_name_the_field(
    cli: Cli, tmp_path: Path, args: list[str], field: str
) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "mc-token")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"], created["cryptogram"]]
    result = cli("authorize", "--event", str(_event(tmp_path, created)), *args, "--yes",
                 expect=ExitCode.VALIDATION)
    assert field in result.stderr


def test_verbose_trace_masks_key_and_cryptogram(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "visa-token", ref="trace-1")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"], created["cryptogram"], STATIC_KEY]
    result = cli("-v", "-o", "json", "authorize", "--event", str(_event(tmp_path, created,
                 "trace-1")), "--amount", "3.00", "--yes")
    assert "POST http://testserver/api/v5/transactions" in result.stderr
    assert json.loads(result.stdout)["state"] == "Approved"


def test_event_and_3ds_cannot_both_read_stdin(cli: Cli) -> None:
    result = cli("authorize", "--event", "-", "--3ds", "-", "--amount", "1", "--yes",
                 input="{}", expect=ExitCode.USAGE)
    assert "stdin" in result.stderr


def test_account_after_keys_refresh_names_encryption_key_id(cli: Cli) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "visa-pan", ref="wp-refresh")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"]]
    cli("keys", "--refresh")  # the cached key id is now another one
    result = cli("account", created["transactionAccountId"], expect=ExitCode.AUTH)
    assert "EncryptionKeyMismatch" in result.stderr
    assert "--encryption-key-id" in result.stderr
    assert "check the profile's credentials" not in result.stderr
    ok = cli.json("account", created["transactionAccountId"], "--encryption-key-id",
                  keys["encryptionKeyId"])
    assert ok["cardType"] == "Card"


def test_authorize_without_a_terminal_asks_for_yes(cli: Cli, tmp_path: Path) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "mc-token", ref="wp-noyes")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"], created["cryptogram"]]
    result = cli("authorize", "--event", str(_event(tmp_path, created, ref="wp-noyes")),
                 "--amount", "1.00", expect=ExitCode.USAGE)
    assert "refusing to send the authorization without confirmation" in result.stderr
    assert "--yes" in result.stderr


def test_authorizations_are_recorded_in_the_history_without_card_data(
    cli: Cli, tmp_path: Path
) -> None:
    keys = _issued_keys(cli)
    created = _make_account(cli, keys, "mc-token", ref="hist-1")
    cli.secrets += [keys["apiKey"], keys["encryptionKey"], created["cryptogram"]]
    event = _event(tmp_path, created, ref="hist-1")
    cli("authorize", "--event", str(event), "--amount", "12.34", "--dry-run")  # not recorded
    cli("authorize", "--event", str(event), "--amount", "12.34", "--yes")
    cli("authorize", "--event", str(event), "--amount", "1.00", "--ref", "hist-2", "--yes",
        expect=ExitCode.DECLINED)  # the cryptogram is single use: 422
    entries = cli.json("history", "--op", "authorize")
    assert [(e["original_ref"], e["amount"], e["outcome"], e["http_status"]) for e in entries] == [
        ("hist-1", "12.34", "approved", 200), ("hist-2", "1.00", "declined", 422)]
    raw = b"".join(p.read_bytes() for p in Path(os.environ["WALLETCTL_AUDIT_LOG"]).parent.iterdir())
    for secret in cli.secrets:
        assert secret.encode() not in raw, "a secret or card datum reached the history"


def test_keys_save_on_a_profile_with_an_inline_key_says_which_key_wins(
        tmp_path: Path, client: Any) -> None:
    """Issue 21: `sandbox serve --write-profile` writes the key inline, and an inline key wins
    over a saved one: --save says so on stderr (one line, exit 0) and how to change it."""
    import tomlkit

    from walletctl.ops.sandbox_admin import profile_table, profile_text

    ENV.transport = client._transport
    path = tmp_path / "profiles.toml"
    path.write_text(profile_text("sandbox", profile_table(
        "http://testserver", amount_format="minor", api_key=STATIC_KEY,
        service_secret=SERVICE_SECRET, default_key=STATIC_KEY)))
    path.chmod(0o600)
    cli = Cli(path, client)
    result = cli("keys", "--save")
    assert result.stderr.strip() == (
        "walletctl: warning: the saved API key is not used: profile sandbox's inline key "
        "(auth.key) wins; remove key from [profiles.sandbox.auth] to use the saved one")
    doc = tomlkit.parse(path.read_text())
    del doc["profiles"]["sandbox"]["auth"]["key"]
    path.write_text(tomlkit.dumps(doc))
    again = cli("keys", "--save", "--refresh")
    assert again.stderr.strip() == "", again.stderr  # the saved key is the one used now


def test_keys_save_names_the_env_key_that_wins(cli: Cli) -> None:
    result = cli("keys", "--save")
    assert f"profile sandbox's env {KEY_ENV} (auth.key_env) wins" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
