"""Signed checkpoints: the Ed25519 signature ``history anchor --sign-key KEY.pem`` adds to a
checkpoint, and its check with ``--trust-key PUB.pem`` (docs/history.md, "Checkpoints").

The signed text names the history's log (its first leaf's hash), the tree's size and root,
the chain's head hash and the time, one per line; the key id is the first 16 hex digits of
the SHA-256 of the raw public key. The location (a path, a URL) is not signed: each reader
names the same history in its own way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.errors import UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

SIGNED_AS = "walletctl checkpoint v1"


def signed_text(log: str, size: int, root: str, head: str, time: str) -> bytes:
    return (f"{SIGNED_AS}\nlog {log}\nsize {size}\nroot {root}\nhead {head}\n"
            f"time {time}\n").encode()


def _pem(path: Path, flag: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {path}: {exc.strerror}") from None
    if len(data) > 64 * 1024:
        raise UsageError(f"{flag}: {path} is not a PEM key (too large)")
    return data


def private_key(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key in PKCS#8 PEM (``openssl genpkey -algorithm ed25519``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(_pem(path, "--sign-key"), password=None)
    except (ValueError, TypeError, binascii.Error):
        raise UsageError(f"--sign-key: {path} is not an unencrypted PEM private key (`openssl "
                         "genpkey -algorithm ed25519 -out KEY.pem` writes one)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"--sign-key: {path} is not an Ed25519 key")
    return key


def public_key(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key in PEM (``openssl pkey -in KEY.pem -pubout``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(_pem(path, "--trust-key"))
    except (ValueError, TypeError, binascii.Error):
        raise UsageError(f"--trust-key: {path} is not a PEM public key (`openssl pkey -in "
                         "KEY.pem -pubout -out PUB.pem` writes one)") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"--trust-key: {path} is not an Ed25519 key")
    return key


def key_id(key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(key: Ed25519PrivateKey, text: bytes) -> tuple[str, str]:
    """(key id, signature in base64)."""
    return key_id(key.public_key()), base64.b64encode(key.sign(text)).decode()


def signed_by(key: Ed25519PublicKey, text: bytes, kid: str | None,
              signature: str | None) -> str | None:
    """None when ``signature`` is ``key``'s over ``text``; else why not."""
    from cryptography.exceptions import InvalidSignature

    if signature is None:
        return "is not signed"
    if kid != key_id(key):
        return f"is signed by key {kid}, not the trusted key {key_id(key)}"
    try:
        key.verify(base64.b64decode(signature, validate=True), text)
    except (InvalidSignature, binascii.Error, ValueError):
        return f"has a signature that key {kid} did not make over it"
    return None
