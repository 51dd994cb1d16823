"""Money: ``Decimal`` amounts with the ISO 4217 exponent, and the two wire formats.

The spec says amounts are "minor units" but its samples show decimal strings, so the
wire format is a profile setting (``amount_format``): ``minor`` sends ``"1234"`` for
EUR 12.34, ``decimal`` sends ``"12.34"``. Inside walletctl amounts are always
``Decimal`` in major units. Floats are refused everywhere.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Literal

AmountFormat = Literal["minor", "decimal"]
AMOUNT_FORMATS: tuple[AmountFormat, ...] = ("minor", "decimal")

# Every ISO 4217 code whose minor unit is not 2. Codes absent here and present in the
# ISO list have exponent 2.
_EXPONENTS: dict[str, int] = {code: exp for exp, codes in (
    (0, "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"),
    (3, "BHD IQD JOD KWD LYD OMR TND"),
    (4, "CLF UYW"),
) for code in codes.split()}
# ISO 4217 codes with no minor unit ("N.A."): metals, funds, testing. Not payable.
_NOT_PAYABLE = frozenset(
    {"XAU", "XAG", "XPD", "XPT", "XBA", "XBB", "XBC", "XBD", "XDR", "XSU", "XUA", "XTS", "XXX"}
)
# Active ISO 4217 codes (list 2025), literal so that checking a currency imports nothing.
_ISO_4217 = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD
    BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD
    EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD
    IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL
    MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN
    PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP
    STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED
    VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX
    YER ZAR ZMW ZWG
    """.split()
)


def payable_currencies() -> list[str]:
    """The codes :func:`check_currency` accepts (upper case), sorted."""
    return sorted(_ISO_4217 - _NOT_PAYABLE)


def check_currency(code: str) -> str:
    """Return the upper-cased ISO 4217 code, or raise ValueError naming the rule."""
    if not isinstance(code, str) or len(code) != 3 or not code.isalpha():
        raise ValueError("must be an ISO 4217 three-letter currency code")
    upper = code.upper()
    if upper not in _ISO_4217:
        raise ValueError(f"{code!r} is not an ISO 4217 currency code")
    if upper in _NOT_PAYABLE:
        raise ValueError(f"{upper} has no minor unit and cannot be paid in")
    return upper


def exponent(currency: str) -> int:
    return _EXPONENTS.get(currency.upper(), 2)


MAX_DIGITS = 15  # larger amounts are typing mistakes, and exceed Decimal's default precision


def to_decimal(value: Any) -> Decimal:
    """Parse a string/int/Decimal into a finite Decimal. Floats are refused."""
    if isinstance(value, bool | float):
        raise ValueError("must be a string or integer amount, not a float")
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, int):
        result = Decimal(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text or text != value or not _looks_numeric(text):
            raise ValueError(f"{value!r} is not a number{_hint(text)}")
        try:
            result = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a number") from None
    else:
        raise ValueError("must be a number")
    if not result.is_finite():
        raise ValueError("must be a finite number")
    if result.adjusted() >= MAX_DIGITS:
        raise ValueError(f"must have at most {MAX_DIGITS} digits before the decimal point")
    if result.is_zero() and result.is_signed():
        result = result.copy_abs()  # "-0.00" would otherwise be sent as "-0.00"
    return result


def _hint(text: str) -> str:
    """What a common mistake in an amount's spelling was."""
    if text.count(",") == 1 and _looks_numeric(text.replace(",", ".")):
        return f" (the decimal separator is a dot: {text.replace(',', '.')})"
    if "e" in text.lower() and _looks_numeric(text.lower().replace("e", "", 1)):
        return " (digits and at most one dot; no exponent)"
    return ""


def _looks_numeric(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    if body.count(".") > 1 or not body:
        return False
    digits = body.replace(".", "", 1)
    return digits.isascii() and digits.isdigit()  # "١٢٣" / "１２３" are not amounts


def quantize(amount: Decimal, currency: str) -> Decimal:
    """Check ``amount`` has at most the currency's decimals; return it at that exponent."""
    exp = exponent(currency)
    step = Decimal(1).scaleb(-exp)
    try:
        q = amount.quantize(step)
    except InvalidOperation:
        raise ValueError(f"{currency} amounts have at most 28 significant digits") from None
    if q != amount:
        raise ValueError(f"{currency} amounts have {exp} decimal place{'s' if exp != 1 else ''}")
    return q


def parse_major(value: Any, currency: str) -> Decimal:
    """A user-typed major-unit amount like ``12.34`` for ``currency``."""
    return quantize(to_decimal(value), currency)


def from_wire(value: Any, currency: str, fmt: AmountFormat) -> Decimal:
    """Decode a wire amount (string or JSON number) into major units."""
    number = to_decimal(value)
    if fmt == "minor":
        if number != number.to_integral_value():
            raise ValueError("must be a whole number of minor units (amount_format = minor)")
        return quantize(number.scaleb(-exponent(currency)), currency)
    return quantize(number, currency)


def to_wire(amount: Decimal, currency: str, fmt: AmountFormat) -> str:
    """Encode major units for the wire: ``"1234"`` (minor) or ``"12.34"`` (decimal)."""
    q = quantize(amount, currency)
    if fmt == "minor":
        return str(int(q.scaleb(exponent(currency))))
    return f"{q:f}"


def format_major(amount: Decimal, currency: str) -> str:
    """Human display: ``12.34 EUR``, ``1,000 JPY``."""
    exp = exponent(currency)
    return f"{amount:,.{exp}f} {currency}"
