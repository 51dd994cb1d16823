"""One set of secret JSON keys, and every way out of walletctl masks all of them.

A body carrying every secret and card-data key (cvv, cvc, cryptograms, API and encryption
keys, PAN fields, passwords, wallet tokens...) goes through each masking entry point from
outside: what a command shows (render), the client's trace, dry run and error, and the smoke
report's exchange log. No secret value comes out of any of them. And the set of keys is
defined once, in ``walletctl/masking.py``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.cli.state import ENV
from walletctl.constants import ExitCode

SRC = Path(__file__).resolve().parents[2] / "src" / "walletctl"

# Every key that any part of walletctl masked before there was one list (wire spelling).
SECRETS: dict[str, str] = {
    "cvv": "739",
    "cvc": "8264",
    "pan": "4111111111111111",
    "cardNumber": "5555555555554444",
    "dpan": "4000056655665556",
    "cryptogram": "AgAAAAAAAIR8CQrXcIhbQAAAAAA=",
    "onlinePaymentCryptogram": "OPC-kq81Zr2m",
    "authenticationValue": "AAV-jJ3kq81Zr2mW",
    "apiKey": "API-KEY-v7Q9wX2v",
    "publicApiKey": "PUB-API-KEY-3mN8",
    "publicKeyApi": "PUB-KEY-API-5tR4",
    "encryptionKey": "ENC-KEY-pL0oK9iJ",
    "privateKey": "PRIV-KEY-uY7tR6eW",
    "secret": "SECRET-qA1zX2cV",
    "password": "hunter2-pwd-7Qz",
    "key": "KEY-bN5mK4jH",
    "authorization": "Bearer AUTH-gF3dS2aQ",
    "token": "TOKEN-wE4rT5yU",
    "walletToken": "WALLET-TOKEN-iO9pL8",
    "signature": "SIG-zX6cV7bN",
    "signedMessage": "SIGNED-MSG-mK8jH9gF",
    "signedKey": "SIGNED-KEY-dS0aQ1wE",
    "encryptedMessage": "ENC-MSG-rT2yU3iO",
    "ephemeralPublicKey": "EPHEMERAL-pL4kJ5hG",
    "intermediateSigningKey": "INTERMEDIATE-fD6sA7",
}
INNER = "PAYMENT-DATA-INNER-xC8vB9"  # inside a structured secret (paymentData)
CARD_IN_TEXT = "4012888888881881"  # a Luhn-valid card number in free text


def secret_body(*, lists: bool = True) -> dict[str, Any]:
    """Every secret key at the top, in other letter cases, nested and (``lists``) in a list."""
    body: dict[str, Any] = {
        **SECRETS,
        "paymentData": {"data": INNER, "version": "EC_v1"},
        "nested": {k.upper(): v for k, v in SECRETS.items()},
        "note": f"card {CARD_IN_TEXT} on file",
        "transactionAccountId": "acct-1",
        "cardType": "Token",
    }
    if lists:
        body["items"] = [{k.lower(): v} for k, v in SECRETS.items()]
    return body


def shown(text: str) -> list[str]:
    """The secret values found in ``text`` as whole words (a fingerprint's hex is not one)."""
    values = [*SECRETS.values(), INNER, CARD_IN_TEXT]
    return [v for v in values if re.search(rf"(?<![0-9A-Za-z]){re.escape(v)}(?![0-9A-Za-z])", text)]


def assert_masked(text: str, where: str) -> None:
    found = shown(text)
    assert not found, f"{where} shows {found}:\n{text}"


# ------------------------------------------------------------------- render: what a command shows


def test_a_command_and_its_trace_never_show_a_secret_the_gateway_sent(make_cli: Any) -> None:
    """``walletctl -v account``: the account's extra fields (render, masked) and the trace.

    (No list of objects for the table: the account table cannot show one yet.)"""
    cli = make_cli("http://gw.example")
    for output in ("json", "table"):
        body = secret_body(lists=output != "table")
        ENV.transport = httpx.MockTransport(lambda request, b=body: httpx.Response(200, json=b))
        result = cli("-v", "-o", output, "account", "acct-1", "--encryption-key-id", "kid-1")
        assert result.exit_code == ExitCode.OK, result.stderr
        assert_masked(result.stdout, f"account -o {output} (stdout)")
        assert_masked(result.stderr, f"account -o {output} (the -v trace)")
    shown_row = json.loads(cli("-o", "json", "account", "acct-1", "--encryption-key-id",
                               "kid-1").stdout)
    for key in ("cvv", "cvc", "pan", "cardNumber", "dpan"):  # card data: not even a fingerprint
        assert shown_row[key] == "****", (key, shown_row[key])
    assert shown_row["apiKey"].startswith("****(sha256:"), shown_row["apiKey"]
    assert shown_row["paymentData"] == "****(structured secret)", shown_row["paymentData"]
    assert shown_row["transactionAccountId"] == "acct-1", shown_row


def test_a_gateway_error_carrying_secrets_never_shows_them(make_cli: Any) -> None:
    body = {"code": "E1", "description": "BadRequest", **secret_body()}
    ENV.transport = httpx.MockTransport(lambda request: httpx.Response(400, json=body))
    cli = make_cli("http://gw.example")
    for output in ("json", "table"):
        result = cli("-v", "-o", output, "account", "acct-1", "--encryption-key-id", "kid-1")
        assert result.exit_code == ExitCode.DECLINED, result.stderr
        assert_masked(result.stdout + result.stderr, f"a 400 with -o {output}")


# ------------------------------------------------------------------ the client: guard, dry run


def test_the_clients_dry_run_and_error_body_mask_every_secret_key() -> None:
    from walletctl.client.gateway import Answer, GatewayClient, gateway_error
    from walletctl.config.profile import AuthSettings, Profile

    profile = Profile(name="p", base_url="http://gw.example", merchant_id="M", store_id="S",
                      user_id="u", auth=AuthSettings(key="tk-MASK-secret-2hG7"))
    with GatewayClient(profile) as client:
        call = client.prepare("POST", "transactions", json=secret_body())
    assert_masked(json.dumps(call.describe()), "the dry run (PreparedCall.describe)")
    assert "tk-MASK-secret-2hG7" not in json.dumps(call.describe())

    answer = Answer(400, {}, json.dumps(secret_body()).encode(), call.secrets())
    error = gateway_error(call, answer)
    assert_masked(json.dumps(error.body) + str(error), "the gateway error")


def test_the_guard_keeps_secret_values_whole_and_scrubs_credentials_elsewhere() -> None:
    """The guard sanitises answers (models then hold secrets as SecretStr): a value under a
    secret key is kept whole; the request's credential is scrubbed from every other string."""
    from walletctl.client.answer_guard import clean

    credential = "tk-CRED-9xY8wV7u"
    data = clean({**SECRETS, "message": f"bad key {credential}", "cvv": credential},
                 (credential,))
    assert data["apiKey"] == SECRETS["apiKey"]
    assert data["cvv"] == credential  # under a secret key: whole (cvv is one, like the rest)
    assert credential not in data["message"], data


# ----------------------------------------------------------------------- smoke: report path


def test_the_smoke_exchange_log_and_report_text_mask_every_secret_key() -> None:
    from walletctl.masking import Masker
    from walletctl.ops.smoke.target import ExchangeLog, RecordingTransport

    masker = Masker()
    log = ExchangeLog(masker)
    inner = httpx.MockTransport(lambda request: httpx.Response(200, json=secret_body()))
    with httpx.Client(transport=RecordingTransport(inner, log)) as client:
        client.post("http://gw.example/api/v5/transactions", json=secret_body())
    (exchange,) = log.all()
    assert_masked(exchange.summary(), "the smoke exchange summary")
    assert_masked(json.dumps(exchange.as_dict()), "the smoke exchange (JSON report)")
    # the values it saw are now known: masked in any later text, and flat JSON text is masked
    # by key even when the values were never seen
    assert_masked(masker.text(f"step failed: {SECRETS['apiKey']} {SECRETS['walletToken']}"),
                  "a report message")
    assert_masked(Masker().text(json.dumps(SECRETS)), "JSON text in a report message")
    assert_masked(json.dumps(Masker().data(secret_body())), "report data")


# ---------------------------------------------------------------------- one set, one module


DISTINCTIVE = {"encryptionkey", "onlinepaymentcryptogram", "authenticationvalue",
               "signedmessage", "publickeyapi", "intermediatesigningkey", "cvv", "cvc"}


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def test_the_secret_keys_are_defined_once() -> None:
    defining = sorted(
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
        if len(_string_constants(path) & DISTINCTIVE) >= 3
    )
    assert defining == ["masking.py"], defining


def test_the_secret_key_set_holds_every_key_ever_masked() -> None:
    from walletctl.masking import SECRET_KEYS

    expected = {k.lower() for k in SECRETS} | {"paymentdata"}
    assert expected <= SECRET_KEYS, expected - SECRET_KEYS


def test_masking_sits_below_every_layer() -> None:
    """It imports the standard library only, so client, render, ops and smoke can all use it."""
    tree = ast.parse((SRC / "masking.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module != "__future__"}
    assert imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return found


@pytest.mark.parametrize("package", ["client", "ops", "models", "history", "config"])
def test_no_layer_below_render_imports_it(package: str) -> None:
    """client, ops, models, history and config mask with walletctl.masking, never render."""
    for path in (SRC / package).rglob("*.py"):
        wrong = sorted(m for m in _imports(path) if m.startswith("walletctl.render"))
        assert not wrong, f"{path.relative_to(SRC)} imports {wrong}"
