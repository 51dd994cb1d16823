"""The emulated wallet token: round trip and every refusal (tamper, expiry, replay, wrong key)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from walletctl.sandbox import crypto
from walletctl.sandbox.crypto import TokenError, WalletSigner

PAN = "4111111111111111"


def _payload(expires_in_ms: int = 60_000, message_id: str | None = None) -> dict[str, Any]:
    return {
        "gatewayMerchantId": "M-1001",
        "messageId": message_id or crypto.new_message_id(),
        "messageExpiration": str(crypto.now_ms() + expires_in_ms),
        "paymentMethod": "CARD",
        "paymentMethodDetails": {"authMethod": "PAN_ONLY", "pan": PAN,
                                 "expirationMonth": 12, "expirationYear": 2030},
    }


@pytest.fixture
def signer() -> WalletSigner:
    return WalletSigner()


@pytest.fixture
def recipient() -> Any:
    return crypto.new_private_key()


def _open(token: Any, signer: WalletSigner, recipient: Any,
          claim: Callable[[str, int], bool] | None = None) -> dict[str, Any]:
    return crypto.open_token(token, recipient, signer.root.public_key(), claim)


def test_round_trip_returns_the_payload(signer: WalletSigner, recipient: Any) -> None:
    payload = _payload()
    token = signer.seal(payload, recipient.public_key())
    assert token["protocolVersion"] == "ECv2"
    assert set(json.loads(token["signedMessage"])) == {"encryptedMessage", "ephemeralPublicKey",
                                                       "tag"}
    assert PAN not in json.dumps(token), "the PAN must be encrypted, not visible in the token"
    assert _open(token, signer, recipient) == payload
    # the JSON-string form (tokenizationData.token) is accepted too
    assert _open(json.dumps(token), signer, recipient) == payload


def _flip_b64(text: str) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[len(raw) // 2] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _tamper_message_field(name: str) -> Callable[[dict[str, Any]], None]:
    def mutate(tok: dict[str, Any]) -> None:
        msg = json.loads(tok["signedMessage"])
        msg[name] = _flip_b64(msg[name])
        tok["signedMessage"] = json.dumps(msg)
    return mutate


def _tamper_signature(tok: dict[str, Any]) -> None:
    tok["signature"] = _flip_b64(tok["signature"])


def _tamper_signed_key(tok: dict[str, Any]) -> None:
    key = json.loads(tok["intermediateSigningKey"]["signedKey"])
    key["keyExpiration"] = str(int(key["keyExpiration"]) + 1)
    tok["intermediateSigningKey"]["signedKey"] = json.dumps(key)


def _tamper_key_signature(tok: dict[str, Any]) -> None:
    sigs = tok["intermediateSigningKey"]["signatures"]
    sigs[0] = _flip_b64(sigs[0])


def _tamper_version(tok: dict[str, Any]) -> None:
    tok["protocolVersion"] = "ECv1"


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (_tamper_message_field("encryptedMessage"), "tampered"),
        (_tamper_message_field("ephemeralPublicKey"), "tampered"),
        (_tamper_message_field("tag"), "tampered"),
        (_tamper_signature, "tampered"),
        (_tamper_signed_key, "tampered"),
        (_tamper_key_signature, "tampered"),
        (_tamper_version, "malformed"),
    ],
    ids=["ciphertext", "ephemeral-key", "tag", "signature", "signed-key", "key-signature",
         "version"],
)
def test_tampering_any_part_is_refused(
    signer: WalletSigner, recipient: Any, mutate: Callable[[dict[str, Any]], None], reason: str
) -> None:
    token = signer.seal(_payload(), recipient.public_key())
    mutate(token)
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == reason, info.value.message
    assert PAN not in info.value.message


def test_tag_recomputed_without_key_is_refused(signer: WalletSigner, recipient: Any) -> None:
    """Re-signing a changed message needs the wallet key: a foreign signer is refused."""
    forger = WalletSigner()  # different root and intermediate keys
    token = forger.seal(_payload(), recipient.public_key())
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == "tampered"


def test_expired_message_is_refused(signer: WalletSigner, recipient: Any) -> None:
    token = signer.seal(_payload(expires_in_ms=-1), recipient.public_key())
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == "expired"


def test_expired_intermediate_key_is_refused(signer: WalletSigner, recipient: Any) -> None:
    token = signer.seal(_payload(), recipient.public_key(),
                        intermediate_expiration_ms=crypto.now_ms() - 1)
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == "expired"


def test_replayed_message_id_is_refused(signer: WalletSigner, recipient: Any) -> None:
    seen: set[str] = set()

    def claim(message_id: str, expires_ms: int) -> bool:
        first = message_id not in seen
        seen.add(message_id)
        return first

    token = signer.seal(_payload(), recipient.public_key())
    _open(token, signer, recipient, claim)
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient, claim)
    assert info.value.reason == "replayed"
    # a fresh token with a new messageId still passes
    _open(signer.seal(_payload(), recipient.public_key()), signer, recipient, claim)


def test_wrong_recipient_key_is_refused(signer: WalletSigner, recipient: Any) -> None:
    token = signer.seal(_payload(), crypto.new_private_key().public_key())
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == "wrong_key"


@pytest.mark.parametrize("token", ["not json", "[]", {"protocolVersion": "ECv2"}, 42])
def test_malformed_tokens_are_refused(
    signer: WalletSigner, recipient: Any, token: Any
) -> None:
    with pytest.raises(TokenError) as info:
        _open(token, signer, recipient)
    assert info.value.reason == "malformed"


def test_public_key_round_trip_and_refusal() -> None:
    key = crypto.new_private_key()
    loaded = crypto.load_public_key(crypto.public_key_b64(key))
    assert crypto.public_key_b64(loaded) == crypto.public_key_b64(key)
    with pytest.raises(TokenError):
        crypto.load_public_key("bm90IGEga2V5")
