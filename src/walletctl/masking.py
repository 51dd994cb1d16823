"""Secrets and card data: the one set of JSON keys that hold them, and every way they are masked.

Below every layer (standard library only): the client, render and smoke all mask with it. A
secret is never shown, not even partly: :func:`mask_secret` gives a short fingerprint so two
values can be told apart. Card data is too small a space for a fingerprint: it becomes
:data:`MASK`, and digit runs that look like card numbers keep their first 6 and last 4 digits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

MASK = "****"

# Lower-cased JSON keys whose values are card data, then every key whose value is a secret.
CARD_DATA_KEYS = frozenset({"pan", "cardnumber", "dpan", "cvv", "cvc"})
SECRET_KEYS = CARD_DATA_KEYS | frozenset({
    "apikey", "publicapikey", "publickeyapi", "encryptionkey", "privatekey", "secret", "password",
    "key", "authorization", "token", "wallettoken", "cryptogram", "onlinepaymentcryptogram",
    "authenticationvalue", "paymentdata", "signature", "signedmessage", "signedkey",
    "encryptedmessage", "ephemeralpublickey", "intermediatesigningkey",
})

_SECRET_HEADERS = frozenset({"x-api-key", "api-key", "cookie", "set-cookie"})
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
_PAN = re.compile(r"(?<!\d)(\d{6})\d{3,9}(\d{4})(?!\d)")  # 13-19 digits
_KEY_PATTERN = "|".join(sorted(SECRET_KEYS, key=len, reverse=True))
_JSON_VALUE = re.compile(rf'("(?i:{_KEY_PATTERN})"\s*:\s*)("(?:[^"\\]|\\.)*"|[^,}}\]\s]+)')
_AUTH_HEADER = re.compile(r"(?i)\b(authorization\s*[:=]\s*)(\w+\s+)?[^\s,;\"']+")


def is_secret_key(key: object) -> bool:
    """True for a JSON key whose value is a secret or card data (any letter case)."""
    return isinstance(key, str) and key.lower() in SECRET_KEYS


def fingerprint(secret: str) -> str:
    """A short, stable, non-reversible tag for a secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:8]


def mask_secret(secret: str | None) -> str:
    if not secret:
        return "(none)"
    return f"****({fingerprint(secret)})"


def mask_pan(pan: str) -> str:
    """The one PAN mask (the CLI's output and the sandbox's answers alike): a card number
    (13-19 digits, like :func:`mask_card_numbers`' runs) keeps its first 6 and last 4 digits
    at most, ``411111******1111``; a shorter number only its last 4."""
    digits = re.sub(r"\D", "", pan)
    if len(digits) < 13:
        return "*" * max(len(digits) - 4, 0) + digits[-4:]
    return digits[:6] + "*" * (len(digits) - 10) + digits[-4:]


def mask_card_numbers(text: str, *, luhn_only: bool = False) -> str:
    """Every 13-19 digit run cut to its first 6 and last 4 digits (with ``luhn_only``, only
    the runs that pass the Luhn check: a report keeps long ids and timestamps)."""

    def cut(match: re.Match[str]) -> str:
        digits = match.group(0)
        if luhn_only and not _luhn_valid(digits):
            return digits
        return f"{match.group(1)}{'*' * (len(digits) - 10)}{match.group(2)}"

    return _PAN.sub(cut, text)


def _luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def mask_known(
    text: str, secrets: Iterable[str], hide: Callable[[str], str] = mask_secret
) -> str:
    """``text`` with each known secret (4 characters or more) replaced by ``hide(secret)``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, hide(secret))
    return text


def mask_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Scrub known secrets and anything that looks like a card number from free text."""
    return mask_card_numbers(mask_known(text, secrets))


def mask_header(name: str, value: str) -> str:
    lower = name.lower()
    if lower in _AUTH_HEADERS:
        scheme, _, cred = value.partition(" ")
        return f"{scheme} {mask_secret(cred)}" if cred else mask_secret(value)
    if lower in _SECRET_HEADERS or "secret" in lower:
        return mask_secret(value)
    return value


def mask_headers(
    headers: Mapping[str, str], extra_secret_headers: tuple[str, ...] = ()
) -> dict[str, str]:
    extra = {h.lower() for h in extra_secret_headers}
    return {
        name: mask_secret(value)
        if name.lower() in extra and name.lower() not in _AUTH_HEADERS
        else mask_header(name, value)
        for name, value in headers.items()
    }


def mask_body(obj: Any) -> Any:
    """A copy of a JSON value with secret keys masked and card-number digit runs cut."""
    return _mask_tree(obj, _shown_secret, mask_text)


def _shown_secret(key: str, value: Any) -> str:
    if key.lower() in CARD_DATA_KEYS:
        return MASK
    return mask_secret(value) if isinstance(value, str) else "****(structured secret)"


def _mask_tree(obj: Any, hide: Callable[[str, Any], str], text: Callable[[str], str]) -> Any:
    if isinstance(obj, dict):
        return {
            key: hide(key, value)
            if is_secret_key(key) and value is not None
            else _mask_tree(value, hide, text)
            for key, value in obj.items()
        }
    if isinstance(obj, list):
        return [_mask_tree(v, hide, text) for v in obj]
    if isinstance(obj, str):
        return text(obj)
    return obj


class Masker:
    """Replaces known secrets, secret JSON values, auth headers and card numbers by
    :data:`MASK` (the smoke reports: every string that reaches one passes through a Masker).

    Two nets: the known secret values of a run (the profile's API key, the service secret,
    encryption keys and cryptograms seen in responses) are replaced wherever they appear,
    and values under secret JSON keys / auth headers are replaced whatever they are.
    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: set[str] = set()
        for value in secrets:
            self.add(value)

    def add(self, secret: str | None) -> None:
        """Remember a secret value (short values are ignored: they would mask ordinary text)."""
        if secret and len(secret) >= 4:
            self._secrets.add(secret)

    def add_from(self, data: Any) -> None:
        """Remember every value held under a secret key anywhere in ``data``."""
        if isinstance(data, dict):
            for key, value in data.items():
                if is_secret_key(key) and isinstance(value, str):
                    self.add(value)
                else:
                    self.add_from(value)
        elif isinstance(data, list):
            for item in data:
                self.add_from(item)

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def text(self, text: str) -> str:
        text = mask_known(text, sorted(self._secrets, key=len, reverse=True), lambda _: MASK)
        text = _JSON_VALUE.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
        text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{MASK}", text)
        return mask_card_numbers(text, luhn_only=True)

    def data(self, value: Any) -> Any:
        """A copy of a JSON-like value with secret keys and known secrets masked."""
        return _mask_tree(value, lambda _key, _value: MASK, self.text)
