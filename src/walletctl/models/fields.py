"""Reusable field checks (ISO codes, phone format, URLs) shared by the request models."""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from walletctl.models.money import check_currency, to_decimal

_PHONE = re.compile(r"^[0-9]{1,3}-[0-9]{1,15}$")
_SUBDIVISION = re.compile(r"^[A-Z]{2}-[A-Z0-9]{1,3}$")


@lru_cache(maxsize=1)
def _alpha3() -> frozenset[str]:
    import pycountry

    return frozenset(c.alpha_3 for c in pycountry.countries)


@lru_cache(maxsize=1)
def _alpha2() -> frozenset[str]:
    import pycountry

    return frozenset(c.alpha_2 for c in pycountry.countries)


@lru_cache(maxsize=1)
def _subdivisions() -> frozenset[str]:
    import pycountry

    return frozenset(s.code for s in pycountry.subdivisions)


def check_alpha3(value: str) -> str:
    upper = value.upper()
    if len(value) != 3 or upper not in _alpha3():
        raise ValueError(f"{value!r} is not an ISO 3166 alpha-3 country code (e.g. DEU, USA)")
    return upper


def check_alpha2(value: str) -> str:
    upper = value.upper()
    if len(value) != 2 or upper not in _alpha2():
        raise ValueError(f"{value!r} is not an ISO 3166-1 alpha-2 country code (e.g. DE, US)")
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


def check_url(value: str) -> str:
    if not re.match(r"^https?://[^\s/?#]+[^\s]*$", value):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


def _money(value: object) -> Decimal:
    return to_decimal(value)


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


Currency = Annotated[str, AfterValidator(check_currency)]
CountryAlpha3 = Annotated[str, AfterValidator(check_alpha3)]
CountryAlpha2 = Annotated[str, AfterValidator(check_alpha2)]
Subdivision = Annotated[str, AfterValidator(check_subdivision)]
MobilePhone = Annotated[str, AfterValidator(check_mobile_phone)]
Url = Annotated[str, Field(max_length=2048), AfterValidator(check_url)]
Text = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_non_blank)]
Reference = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$"),
]
Money = Annotated[Decimal, BeforeValidator(_money), AfterValidator(_non_negative)]
PositiveMoney = Annotated[Decimal, BeforeValidator(_money), AfterValidator(_positive)]
Rate = Annotated[Decimal, BeforeValidator(_money), AfterValidator(_non_negative)]
