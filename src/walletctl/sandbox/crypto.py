"""The emulated wallet's payment token (docs/walletpay.md, "The wallet token"). A
:class:`TokenError` message never holds key material or card data."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from walletctl.models.base import dumps

PROTOCOL_VERSION = "ECv2"
SENDER_ID = "WalletPay"
GATEWAY_NAME = "walletctl-sandbox"
RECIPIENT_ID = f"gateway:{GATEWAY_NAME}"
HKDF_INFO = b"WalletPay"
AUTH_METHODS = ("PAN_ONLY", "CRYPTOGRAM_3DS")


class TokenError(Exception):
    """The token is refused; ``reason``: tampered, expired, replayed, malformed or wrong_key."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def b64e(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64d(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise TokenError("malformed", f"{what} must be a base64 string")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise TokenError("malformed", f"{what} is not valid base64") from None


def new_private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> str:  # for the sandbox's store only
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def load_private_key_pem(pem: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):  # the store holds only its own keys
        raise ValueError("stored private key must be an EC P-256 key")
    return key


def public_key_b64(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) -> str:
    """Base64 of the SubjectPublicKeyInfo DER of a P-256 key (the wire ``encryptionKey``)."""
    pub = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    der = pub.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return b64e(der)


def load_public_key(text: Any, what: str = "public key") -> ec.EllipticCurvePublicKey:
    raw = b64d(text, what)
    try:
        key = serialization.load_der_public_key(raw)
    except ValueError:
        raise TokenError("malformed", f"{what} is not a DER public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise TokenError("malformed", f"{what} must be an EC P-256 key")
    return key


def _signed_string(*parts: str) -> bytes:
    out = bytearray()
    for part in parts:
        data = part.encode("utf-8")
        out += struct.pack("<I", len(data)) + data
    return bytes(out)


def _sign(key: ec.EllipticCurvePrivateKey, data: bytes) -> str:
    return b64e(key.sign(data, ec.ECDSA(hashes.SHA256())))


def _verify(key: ec.EllipticCurvePublicKey, signature: bytes, data: bytes) -> bool:
    try:
        key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def _derive(ephemeral_pub: bytes, shared: bytes) -> tuple[bytes, bytes]:
    okm = HKDF(algorithm=hashes.SHA256(), length=64, salt=b"\x00" * 32, info=HKDF_INFO).derive(
        ephemeral_pub + shared
    )
    return okm[:32], okm[32:]


def _ctr(key: bytes, data: bytes) -> bytes:
    ctx = Cipher(algorithms.AES(key), modes.CTR(b"\x00" * 16)).encryptor()
    return ctx.update(data) + ctx.finalize()


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class WalletSigner:
    """The emulated wallet provider: a root key (trusted by the gateway) and an intermediate
    signing key signed by it."""

    root: ec.EllipticCurvePrivateKey = field(default_factory=new_private_key)
    intermediate: ec.EllipticCurvePrivateKey = field(default_factory=new_private_key)
    intermediate_expiration_ms: int = field(default_factory=lambda: now_ms() + 365 * 86400_000)

    def seal(
        self,
        payload: dict[str, Any],
        recipient: ec.EllipticCurvePublicKey,
        *,
        intermediate_expiration_ms: int | None = None,
    ) -> dict[str, Any]:
        eph = new_private_key()
        eph_pub = eph.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        shared = eph.exchange(ec.ECDH(), recipient)
        enc_key, mac_key = _derive(eph_pub, shared)
        ciphertext = _ctr(enc_key, dumps(payload).encode("utf-8"))
        tag = hmac.new(mac_key, ciphertext, hashlib.sha256).digest()
        signed_message = dumps({"encryptedMessage": b64e(ciphertext),
                                "ephemeralPublicKey": b64e(eph_pub), "tag": b64e(tag)})
        expiry = intermediate_expiration_ms or self.intermediate_expiration_ms
        signed_key = dumps({"keyValue": public_key_b64(self.intermediate),
                            "keyExpiration": str(expiry)})
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "signature": _sign(
                self.intermediate,
                _signed_string(SENDER_ID, RECIPIENT_ID, PROTOCOL_VERSION, signed_message),
            ),
            "intermediateSigningKey": {
                "signedKey": signed_key,
                "signatures": [
                    _sign(self.root, _signed_string(SENDER_ID, PROTOCOL_VERSION, signed_key))
                ],
            },
            "signedMessage": signed_message,
        }


def _json_object(text: Any, what: str) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        raise TokenError("malformed", f"{what} must be a JSON string")
    try:
        value = json.loads(text)
    except ValueError:
        raise TokenError("malformed", f"{what} is not valid JSON") from None
    except RecursionError:  # a string of 100,000 "[": refused, never a 500
        raise TokenError("malformed", f"{what} is nested too deeply") from None
    if not isinstance(value, dict):
        raise TokenError("malformed", f"{what} must be a JSON object")
    return value


def _epoch_ms(value: Any, what: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise TokenError("malformed", f"{what} must be epoch milliseconds") from None


def open_token(
    token: Any,
    recipient: ec.EllipticCurvePrivateKey,
    root_public: ec.EllipticCurvePublicKey,
    claim: Callable[[str, int], bool] | None = None,
    *,
    now: int | None = None,
) -> dict[str, Any]:
    """Verify and decrypt a token; return its payload. Raise :class:`TokenError` otherwise.
    ``claim(messageId, expiry_ms)`` is False for a messageId it has seen: a replay."""
    now = now_ms() if now is None else now
    tok = _json_object(token, "paymentData token")  # the object, or its JSON string
    if tok.get("protocolVersion") != PROTOCOL_VERSION:
        raise TokenError("malformed", f"protocolVersion must be {PROTOCOL_VERSION}")
    signed_message = tok.get("signedMessage")
    isk = tok.get("intermediateSigningKey")
    if not isinstance(signed_message, str) or not isinstance(isk, dict):
        raise TokenError("malformed", "signedMessage and intermediateSigningKey are required")
    if not _verify(
        _intermediate_key(isk, root_public, now),
        b64d(tok.get("signature"), "signature"),
        _signed_string(SENDER_ID, RECIPIENT_ID, PROTOCOL_VERSION, signed_message),
    ):
        raise TokenError("tampered", "message signature does not verify")
    payload = _decrypt(_json_object(signed_message, "signedMessage"), recipient)
    message_id = payload.get("messageId")
    expiration = _epoch_ms(payload.get("messageExpiration"), "messageExpiration")
    if not isinstance(message_id, str) or not message_id:
        raise TokenError("malformed", "messageId is required")
    details = payload.get("paymentMethodDetails")
    if not isinstance(details, dict) or details.get("authMethod") not in AUTH_METHODS:
        raise TokenError("malformed", "paymentMethodDetails.authMethod must be PAN_ONLY or "
                                      "CRYPTOGRAM_3DS")
    if expiration <= now:
        raise TokenError("expired", "the payment token has expired (messageExpiration)")
    if claim is not None and not claim(message_id, expiration):
        raise TokenError("replayed", "the payment token was already used (messageId)")
    return payload


def _intermediate_key(isk: dict[str, Any], root_public: ec.EllipticCurvePublicKey,
                      now: int) -> ec.EllipticCurvePublicKey:
    """The intermediate signing key, signed by the wallet root and not expired."""
    signed_key = isk.get("signedKey")
    signatures = isk.get("signatures")
    if not isinstance(signed_key, str) or not isinstance(signatures, list) or not signatures:
        raise TokenError("malformed", "intermediateSigningKey needs signedKey and signatures")
    key_data = _json_object(signed_key, "intermediateSigningKey.signedKey")
    if not any(
        _verify(root_public, b64d(sig, "intermediateSigningKey.signatures"),
                _signed_string(SENDER_ID, PROTOCOL_VERSION, signed_key))
        for sig in signatures
    ):
        raise TokenError("tampered", "intermediate signing key is not signed by the wallet root")
    if _epoch_ms(key_data.get("keyExpiration"), "keyExpiration") <= now:
        raise TokenError("expired", "intermediate signing key has expired")
    return load_public_key(key_data.get("keyValue"), "intermediate keyValue")


def _decrypt(msg: dict[str, Any], recipient: ec.EllipticCurvePrivateKey) -> dict[str, Any]:
    """The signed message's payload: the tag checked (constant time), then decrypted."""
    ciphertext = b64d(msg.get("encryptedMessage"), "encryptedMessage")
    eph_pub_raw = b64d(msg.get("ephemeralPublicKey"), "ephemeralPublicKey")
    tag = b64d(msg.get("tag"), "tag")
    try:
        eph_pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), eph_pub_raw)
    except ValueError:
        raise TokenError("malformed", "ephemeralPublicKey is not a P-256 point") from None
    enc_key, mac_key = _derive(eph_pub_raw, recipient.exchange(ec.ECDH(), eph_pub))
    if not hmac.compare_digest(hmac.new(mac_key, ciphertext, hashlib.sha256).digest(), tag):
        raise TokenError(
            "wrong_key", "tag does not verify (tampered, or encrypted to another encryption key)"
        )
    try:
        text = _ctr(enc_key, ciphertext).decode("utf-8")
    except UnicodeDecodeError:
        raise TokenError("malformed", "decrypted message is not UTF-8 JSON") from None
    return _json_object(text, "decrypted message")


def new_message_id() -> str:
    return "msg_" + os.urandom(12).hex()
