"""Text people and gateways wrote, on its way to a terminal: the characters never stored
and never shown raw. Control characters (C0, DEL, C1) and the invisible or
direction-changing ones (bidi embeddings, overrides and isolates, zero-width marks, line and
paragraph separators) can redraw or reorder what an approver reads. One list: the CLI refuses
them (:func:`checked_plain`, exit 4), a local history file's checks and the database's
(``history/migrations/V6.sql``) refuse them, and the render shows them escaped
(:func:`escaped`)."""

from __future__ import annotations

import re

from walletctl.errors import RequestValidationError

# (first, last) code points, inclusive
RANGES: tuple[tuple[int, int], ...] = (
    (0x00, 0x1F), (0x7F, 0x9F), (0x061C, 0x061C), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2069), (0xFEFF, 0xFEFF))
CLASS = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in RANGES)
_FOUND = re.compile(f"[{re.escape(CLASS).replace(chr(92) + '-', '-')}]")
RULE = "must not contain control characters (C0, C1, bidi or invisible marks)"


def has_control(text: str) -> bool:
    return _FOUND.search(text) is not None


def checked_plain(field: str, text: str | None) -> str | None:
    """``text`` unchanged, or RequestValidationError naming ``field`` (exit 4, nothing
    sent) when it holds one of the characters above."""
    if text is not None and has_control(text):
        raise RequestValidationError([(field, RULE)])
    return text


def _code(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def escaped(text: str) -> str:
    """``text`` with each of those characters written out (``\\x1b``, ``\\u202e``): one line,
    shown as it is."""
    return _FOUND.sub(_code, text)
