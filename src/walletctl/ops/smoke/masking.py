"""Masking for smoke reports: every string that reaches a report passes through a Masker.

Two nets: the known secret values of this run (the profile's API key, the service secret,
encryption keys and cryptograms seen in responses) are replaced wherever they appear, and
values under sensitive JSON keys / auth headers are replaced whatever they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "****"

# Lower-cased JSON keys whose values are never shown.
SENSITIVE_KEYS = frozenset(
    {
        "apikey",
        "publickeyapi",
        "encryptionkey",
        "secret",
        "password",
        "cryptogram",
        "pan",
        "cardnumber",
        "authorization",
        "token",
        "wallettoken",
        "paymentdata",
        "privatekey",
        "key",
        "cvv",
        "cvc",
        "signature",
        "signedmessage",
        "encryptedmessage",
        "ephemeralpublickey",
        "intermediatesigningkey",
        "publicapikey",
        "onlinepaymentcryptogram",
        "authenticationvalue",
        "dpan",
        "signedkey",
    }
)
_KEY_PATTERN = "|".join(sorted(SENSITIVE_KEYS, key=len, reverse=True))
_JSON_VALUE = re.compile(
    rf'("(?i:{_KEY_PATTERN})"\s*:\s*)("(?:[^"\\]|\\.)*"|[^,}}\]\s]+)'
)
_AUTH_HEADER = re.compile(r"(?i)\b(authorization\s*[:=]\s*)(\w+\s+)?[^\s,;\"']+")
_PAN = re.compile(r"(?<!\d)(\d{6})\d{3,9}(\d{4})(?!\d)")


class Masker:
    """Replaces known secrets, sensitive JSON values, auth headers and card numbers."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: set[str] = set()
        for value in secrets:
            self.add(value)

    def add(self, secret: str | None) -> None:
        """Remember a secret value (short values are ignored: they would mask ordinary text)."""
        if secret and len(secret) >= 4:
            self._secrets.add(secret)

    def add_from(self, data: Any) -> None:
        """Remember every value held under a sensitive key anywhere in ``data``."""
        if isinstance(data, dict):
            for key, value in data.items():
                if isinstance(key, str) and key.lower() in SENSITIVE_KEYS:
                    if isinstance(value, str):
                        self.add(value)
                    else:
                        self.add_from(value)
                else:
                    self.add_from(value)
        elif isinstance(data, list):
            for item in data:
                self.add_from(item)

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def text(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
        text = _JSON_VALUE.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
        text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{MASK}", text)
        return _PAN.sub(_mask_pan, text)

    def data(self, value: Any) -> Any:
        """A copy of a JSON-like value with sensitive keys and known secrets masked."""
        if isinstance(value, dict):
            return {
                k: (MASK if isinstance(k, str) and k.lower() in SENSITIVE_KEYS and v is not None
                    else self.data(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def _mask_pan(match: re.Match[str]) -> str:
    """Mask a 13-19 digit run that passes the Luhn check (a card number), keep 6 + 4 digits."""
    digits = match.group(0)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    if total % 10:
        return digits
    return f"{match.group(1)}{'*' * (len(digits) - 10)}{match.group(2)}"
