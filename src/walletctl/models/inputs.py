"""A command's typed inputs checked with the request models' own field rules, first.

Every command that takes a reference, an amount or a currency calls :func:`check_inputs`
before it opens the history, looks anything up or sends anything: a gateway that is down never
hides a typo (``capture R --amount 1,50`` is exit 4, not "could not connect"), and what a
command accepts is exactly what the request built from it accepts (the rules live once, in
:mod:`walletctl.models.fields`; no command keeps a pattern of its own). A ``--reason`` is
checked here too (:func:`clean_reason`), before the desk's rules ask for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from walletctl.errors import RequestValidationError

Kind = str  # "reference" | "amount" | "currency"


@lru_cache(maxsize=4)
def _adapter(kind: Kind) -> Any:
    from pydantic import TypeAdapter

    from walletctl.models.fields import Currency, PositiveMoney, Reference

    return TypeAdapter({"reference": Reference, "amount": PositiveMoney,
                        "currency": Currency}[kind])


def check_inputs(
    *,
    references: Mapping[str, str | None] | None = None,
    amounts: Mapping[str, str | None] | None = None,
    currencies: Mapping[str, str | None] | None = None,
) -> None:
    """Raise one :class:`RequestValidationError` (exit 4) naming every broken input; ``None``
    values (not given) are skipped. Keys are what the user typed: ``REF``, ``--amount``."""
    from pydantic import ValidationError

    from walletctl.models.base import validation_problems

    problems: list[tuple[str, str]] = []
    for kind, given in (("reference", references), ("amount", amounts),
                        ("currency", currencies)):
        for field, value in (given or {}).items():
            try:
                if value is not None:
                    _adapter(kind).validate_python(value)
            except ValidationError as exc:
                problems.append((field, validation_problems(exc)[0][1]))
    if problems:
        raise RequestValidationError(problems)


def check_identifier(value: str, field: str, max_length: int = 255) -> str:
    """An id typed by the user (not a merchant reference: those follow :func:`check_inputs`'s
    reference rule), before it goes into a URL (nothing sent yet)."""
    rule = None
    if not value.strip():
        rule = "must not be empty"
    elif len(value) > max_length:
        rule = f"must be at most {max_length} characters (got {len(value)})"
    elif any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        rule = "must not contain control characters (newline, tab, escape...)"
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            rule = "is not valid text (undecodable bytes in the argument?)"
    if rule is not None:
        raise RequestValidationError([(field, rule)])
    return value


MAX_REASON = 500


def clean_reason(reason: str | None) -> str | None:
    """``--reason``: 1-500 printable characters (surrounding spaces dropped)."""
    if reason is None:
        return None
    text = reason.strip()
    if not text:
        raise RequestValidationError([("--reason", "must not be empty")])
    if len(text) > MAX_REASON:
        raise RequestValidationError([("--reason", f"at most {MAX_REASON} characters")])
    if not text.isprintable():
        raise RequestValidationError([("--reason", "must not contain control characters")])
    return text
