"""All masking lives here: secrets, card numbers, cryptograms, auth headers, JSON bodies.

A secret is never shown, not even partly: it is replaced by a short fingerprint
(``sha256:1a2b3c4d``) so two values can be told apart without revealing either.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# Lower-cased JSON keys whose values are secrets or card data.
SENSITIVE_KEYS = frozenset(
    {
        "apikey",
        "publicapikey",
        "publickeyapi",
        "encryptionkey",
        "privatekey",
        "secret",
        "password",
        "key",
        "cryptogram",
        "onlinepaymentcryptogram",
        "authenticationvalue",
        "pan",
        "cardnumber",
        "dpan",
        "cvv",
        "cvc",
        "paymentdata",
        "signature",
        "signedmessage",
        "signedkey",
        "encryptedmessage",
    }
)
_PAN = re.compile(r"(?<!\d)(\d{6})\d{3,9}(\d{4})(?!\d)")


def fingerprint(secret: str) -> str:
    """A short, stable, non-reversible tag for a secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:8]


def mask_secret(secret: str | None) -> str:
    if not secret:
        return "(none)"
    return f"****({fingerprint(secret)})"


def mask_pan(pan: str) -> str:
    """First 6 and last 4 digits at most: ``411111******1111``."""
    digits = re.sub(r"\D", "", pan)
    if len(digits) < 10:
        return "*" * max(len(digits) - 4, 0) + digits[-4:]
    return digits[:6] + "*" * (len(digits) - 10) + digits[-4:]


def mask_header(name: str, value: str) -> str:
    lower = name.lower()
    if lower in ("authorization", "proxy-authorization"):
        scheme, _, cred = value.partition(" ")
        return f"{scheme} {mask_secret(cred)}" if cred else mask_secret(value)
    if lower in ("x-api-key", "api-key", "cookie", "set-cookie") or "secret" in lower:
        return mask_secret(value)
    return value


def mask_headers(headers: Any, extra_secret_headers: tuple[str, ...] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        if name.lower() in ("authorization", "proxy-authorization"):
            out[name] = mask_header(name, value)
        elif name.lower() in {h.lower() for h in extra_secret_headers}:
            out[name] = mask_secret(value)
        else:
            out[name] = mask_header(name, value)
    return out


def mask_body(obj: Any) -> Any:
    """A copy of a JSON value with sensitive keys masked and PAN-like digit runs cut."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if isinstance(key, str) and key.lower() in SENSITIVE_KEYS and value is not None:
                out[key] = (
                    mask_secret(value) if isinstance(value, str) else "****(structured secret)"
                )
            else:
                out[key] = mask_body(value)
        return out
    if isinstance(obj, list):
        return [mask_body(v) for v in obj]
    if isinstance(obj, str):
        return mask_text(obj)
    return obj


def mask_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Scrub known secrets and anything that looks like a card number from free text."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, mask_secret(secret))
    return _PAN.sub(lambda m: m.group(1) + "*" * (len(m.group(0)) - 10) + m.group(2), text)


def scrub(obj: Any, secrets: tuple[str, ...]) -> Any:
    """A copy of a JSON value with every known secret masked inside its strings.

    For what a server sends back: a gateway may echo the credential it was given.
    """
    if not secrets:
        return obj
    if isinstance(obj, str):
        return mask_text(obj, secrets)
    if isinstance(obj, dict):
        return {k: scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v, secrets) for v in obj]
    return obj
