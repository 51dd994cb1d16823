"""Reusable field checks (ISO codes, phone format, URLs, merchant references) shared by the
request models, the CLI's inputs and the sandbox."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from walletctl.models.money import check_currency, payable_currencies, to_decimal

_PHONE = re.compile(r"^[0-9]{1,3}-[0-9]{1,15}$")
_SUBDIVISION = re.compile(r"^[A-Z]{2}-[A-Z0-9]{1,3}$")


@lru_cache(maxsize=1)
def _alpha3() -> frozenset[str]:
    import pycountry

    return frozenset(c.alpha_3 for c in pycountry.countries)


@lru_cache(maxsize=1)
def _subdivisions() -> frozenset[str]:
    import pycountry

    return frozenset(s.code for s in pycountry.subdivisions)


def check_alpha3(value: str) -> str:
    upper = value.upper()
    if len(value) != 3 or upper not in _alpha3():
        raise ValueError(f"{value!r} is not an ISO 3166 alpha-3 country code (e.g. DEU, USA)")
    return upper


def check_subdivision(value: str) -> str:
    upper = value.upper()
    if not _SUBDIVISION.match(upper) or upper not in _subdivisions():
        raise ValueError(f"{value!r} is not an ISO 3166-2 subdivision code (e.g. DE-BY, US-CA)")
    return upper


def check_mobile_phone(value: str) -> str:
    if not _PHONE.match(value):
        raise ValueError(
            f"{value!r} must be {{1-3 digit country calling code}}-{{number}}, e.g. 49-1701234567"
        )
    return value


# Python's whitespace (str.isspace: also U+001C-U+001F, which ECMAScript's \s leaves out),
# spelt out so that a pattern means the same to every reader
SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
URL_PATTERN = f"^https?://[^{SPACES}/?#]+[^{SPACES}]*$"
NOT_BLANK_PATTERN = f"[^{SPACES}]"


def check_url(value: str) -> str:
    if not re.match(URL_PATTERN, value):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


# -- the merchant reference rule (stated once: every command, batch reader and sandbox route
# that takes a clientSystemTransactionId/clientSystemInvoiceId uses check_reference) ---------

REFERENCE_MAX = 64
REFERENCE_RULE = ("1-64 printable characters, no tabs, line breaks or control characters, "
                  "not starting or ending with a space")
# Cc control, Cf format (zero-width...), Cs surrogate, Co private use; Zs/Zl/Zp separators
# other than the plain space U+0020 (no-break space, line/paragraph separators...)
_NOT_IN_REFERENCE = frozenset({"Cc", "Cf", "Cs", "Co", "Zs", "Zl", "Zp"})


def reference_problem(value: str) -> str | None:
    """Why ``value`` is not a merchant reference (``None``: it is one). Lengths count
    Unicode code points, as the rule says (not bytes, not UTF-16 units)."""
    if not value:
        return "is empty"
    if len(value) > REFERENCE_MAX:
        return f"is {len(value)} characters long"
    if not (value.isascii() and value.isprintable()):  # printable ASCII: only the ends to see
        return _odd_character(value)
    return _edge_space(value)


def _odd_character(value: str) -> str | None:
    for position, char in enumerate(value, start=1):
        if char != " " and unicodedata.category(char) in _NOT_IN_REFERENCE:
            name = unicodedata.name(char, "") if unicodedata.category(char) != "Cs" else \
                "(a lone surrogate: undecodable bytes?)"
            return (f"has U+{ord(char):04X}{f' {name}' if name else ''} at character "
                    f"{position}")
    return _edge_space(value)


def _edge_space(value: str) -> str | None:
    if value[0] == " ":
        return "starts with a space"
    if value[-1] == " ":
        return "ends with a space"
    return None


@lru_cache(maxsize=1)
def reference_pattern() -> str:
    """:data:`REFERENCE_RULE` as a regular expression (for the OpenAPI document): the
    characters of the refused categories as ranges of the characters themselves (no escapes,
    which not every reader of a pattern translates). Lone surrogates are left out: they are not
    text, so no JSON string or UTF-8 query value can hold one."""
    ranges: list[tuple[int, int]] = []
    for cp in range(0x110000):
        if cp != 0x20 and unicodedata.category(chr(cp)) in _NOT_IN_REFERENCE - {"Cs"}:
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))

    refused = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)
    return (f"^[^ {refused}]([^{refused}]{{0,{REFERENCE_MAX - 2}}}[^ {refused}])?$")


def check_reference(value: str) -> str:
    """``value`` when it is a merchant reference, else ValueError naming what is wrong and
    the rule (:data:`REFERENCE_RULE`). Never echoes the value (it may hold anything)."""
    problem = reference_problem(value) if isinstance(value, str) else "is not text"
    if problem is not None:
        raise ValueError(f"{problem}; a reference must be {REFERENCE_RULE}")
    return value


def _non_negative(value: Decimal) -> Decimal:
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _positive(value: Decimal) -> Decimal:
    if value <= 0:
        raise ValueError("must be greater than zero")
    return value


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _schema(**extra: Any) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` adding ``extra`` (callables are called: lists built lazily),
    so that the OpenAPI document states the rule an ``AfterValidator`` checks."""
    def add(schema: dict[str, Any]) -> None:
        schema.update({k: v() if callable(v) else v for k, v in extra.items()})
    return add


Currency = Annotated[str, AfterValidator(check_currency), Field(json_schema_extra=_schema(
    enum=payable_currencies, description="ISO 4217 code (read in any letter case)"))]
CountryAlpha3 = Annotated[str, AfterValidator(check_alpha3), Field(json_schema_extra=_schema(
    enum=lambda: sorted(_alpha3()), description="ISO 3166 alpha-3 (any letter case)"))]
Subdivision = Annotated[str, AfterValidator(check_subdivision), Field(
    json_schema_extra=_schema(enum=lambda: sorted(_subdivisions()),
                              description="ISO 3166-2 code (any letter case)"))]
MobilePhone = Annotated[str, AfterValidator(check_mobile_phone),
                        Field(json_schema_extra=_schema(pattern=_PHONE.pattern))]
Url = Annotated[str, Field(max_length=2048, json_schema_extra=_schema(pattern=URL_PATTERN)),
                AfterValidator(check_url)]
Text = Annotated[str, Field(min_length=1, max_length=255, json_schema_extra=_schema(
    pattern=NOT_BLANK_PATTERN)), AfterValidator(_non_blank)]
Reference = Annotated[
    str,
    AfterValidator(check_reference),
    Field(description=f"Merchant reference: {REFERENCE_RULE}",
          json_schema_extra=_schema(minLength=1, maxLength=REFERENCE_MAX,
                                    pattern=reference_pattern)),
]
Money = Annotated[Decimal, BeforeValidator(to_decimal), AfterValidator(_non_negative)]
PositiveMoney = Annotated[Decimal, BeforeValidator(to_decimal), AfterValidator(_positive)]
Rate = Annotated[Decimal, BeforeValidator(to_decimal), AfterValidator(_non_negative)]
