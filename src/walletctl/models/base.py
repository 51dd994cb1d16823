"""Base classes for wire models: camelCase out, case-insensitive in, money in major units.

* Requests are sent with the spec's table spelling (camelCase aliases).
* Keys are read case-insensitively (the spec's samples mix ``PaymentMethod``,
  ``apmdetails``, ``totaltaxAmount``); documented variant names map via ``_variants``.
* :meth:`WireModel.from_wire` accepts the wire names only (any letter case, plus the
  variants), never the Python field names: ``merchant_id`` in a body is not ``merchantId``
  (it is an unknown key). Python code builds models by field name as usual.
* Money fields hold ``Decimal`` major units; :func:`decode_money` / :func:`encode_money`
  convert the whole payload tree from / to the profile's wire format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from walletctl.errors import RequestValidationError
from walletctl.models.fields import NOT_BLANK_PATTERN
from walletctl.models.money import AmountFormat, from_wire, to_wire

MONEY_KEYS = frozenset(k.lower() for k in (
    "amount", "unitAmount", "unitTaxAmount", "totalAmount", "totalTaxAmount", "discountAmount",
    "discountTaxAmount", "shippingAmount", "shippingTaxAmount", "transactionAmount"))

_KEY_MAPS: dict[type[BaseModel], dict[str, str]] = {}


def fold_key(key: object) -> str:
    """A JSON key in lower case for case-insensitive matching, folding ASCII letters only.

    ``str.lower`` also folds e.g. the Kelvin sign (U+212A) to ``k``, so
    ``"chec\u212aoutDetails"`` would read as ``checkoutDetails``; a key with any non-ASCII
    character is returned as it is, and so never matches a (pure ASCII) wire name.
    """
    if isinstance(key, str):
        return key.lower() if key.isascii() else key
    return str(key)


def spelled_as(*canon: str) -> Callable[[object], object]:
    """A ``BeforeValidator``: a string that is one of ``canon`` in any letter case (also with
    the British ``preauthorisation``) becomes that spelling; anything else is left as it is."""
    by_folded = {c.lower(): c for c in canon}

    def read(value: object) -> object:
        if isinstance(value, str):
            return by_folded.get(value.lower().replace("preauthorisation", "preauthorization"),
                                 value)
        return value
    return read

_NAME = r"[A-Za-z][A-Za-z0-9_]*(?:\[\d+\])*"
_FIELD_PREFIX = re.compile(rf"^{_NAME}(?:\.{_NAME})*$")  # e.g. itemDetails[0].totalAmount


def loads(data: bytes | str) -> Any:
    """Parse JSON with every non-integer number as ``Decimal`` (never float)."""
    return json.loads(data, parse_float=Decimal)


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, separators=(",", ":"))


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


class WireModel(BaseModel):
    """A spec object that walletctl sends (unknown keys refused: they are usually typos)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        defer_build=True,
        str_strip_whitespace=False,
    )
    # lower-cased variant key -> field alias (e.g. "apmprovidername" -> "apmProvider")
    _variants: ClassVar[dict[str, str]] = {}
    # A request naming one field twice (two spellings) is refused: it is usually a mistake.
    _refuse_duplicates: ClassVar[bool] = True

    @classmethod
    def _key_map(cls) -> dict[str, str]:
        found = _KEY_MAPS.get(cls)
        if found is None:
            found = {}
            for name, field in cls.model_fields.items():
                alias = field.alias or name
                found[alias.lower()] = alias
            found.update(cls._variants)
            _KEY_MAPS[cls] = found
        return found

    @model_validator(mode="before")
    @classmethod
    def _fold_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        key_map = cls._key_map()
        out: dict[str, Any] = {}
        for key, value in data.items():
            canon = key_map.get(fold_key(key), key) if isinstance(key, str) else key
            if canon in out:
                if cls._refuse_duplicates:
                    raise ValueError(f"{key}: given twice (keys are read case-insensitively)")
                if key != canon:  # a response: the table spelling wins over a variant
                    continue
            out[canon] = value
        return out

    def to_wire(self, fmt: AmountFormat) -> dict[str, Any]:
        """The JSON body to send: table spelling, no nulls, money in ``fmt``."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        currency = _currency_of(body)
        return encode_money(body, currency, fmt) if currency else body

    @classmethod
    def from_wire(cls, data: Any, fmt: AmountFormat | None = None) -> Self:
        """Validate a wire payload; raise :class:`RequestValidationError` naming each field."""
        problems: list[tuple[str, str]] = []
        if fmt is not None and isinstance(data, dict):
            currency = _currency_of(data)
            if currency:
                data = decode_money(data, currency, fmt, problems)
        if problems:
            raise RequestValidationError(problems)
        try:
            # wire names only: by_name=False refuses ``merchant_id`` for ``merchantId``
            return cls.model_validate(data, by_alias=True, by_name=False)
        except ValidationError as exc:
            raise RequestValidationError(validation_problems(exc)) from None


class ResponseModel(WireModel):
    """A spec object walletctl receives: unknown keys are kept (gateways add fields), and a
    field sent under two spellings (``apmName`` and ``apmProviderName``) is not an error."""

    model_config = ConfigDict(extra="allow")
    _refuse_duplicates: ClassVar[bool] = False


def _currency_of(data: dict[str, Any]) -> str | None:
    for key, value in data.items():
        if fold_key(key) == "currencycode" and isinstance(value, str):
            return value.upper()
    return None


def walk_money(obj: Any, convert: Any, path: str, problems: list[tuple[str, str]] | None) -> Any:
    """``obj`` with ``convert`` applied to every money key's value; each ValueError is added
    to ``problems`` with the value's path (raised when ``problems`` is None)."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            sub = f"{path}.{key}" if path else str(key)
            is_money = isinstance(key, str) and fold_key(key) in MONEY_KEYS
            if is_money and value is not None and not isinstance(value, dict | list):
                try:
                    out[key] = convert(value)
                except ValueError as exc:
                    if problems is None:
                        raise
                    problems.append((sub, str(exc)))
                    out[key] = value
            else:
                out[key] = walk_money(value, convert, sub, problems)
        return out
    if isinstance(obj, list):
        return [walk_money(v, convert, f"{path}[{i}]", problems) for i, v in enumerate(obj)]
    return obj


def decode_money(
    data: Any, currency: str, fmt: AmountFormat, problems: list[tuple[str, str]] | None = None
) -> Any:
    """Wire amounts -> ``Decimal`` major units, for every money key in the tree."""
    try:
        from walletctl.models.money import check_currency

        check_currency(currency)
    except ValueError:
        return data  # the currency field itself will be reported by validation
    return walk_money(data, lambda v: from_wire(v, currency, fmt), "", problems)


def encode_money(data: Any, currency: str, fmt: AmountFormat) -> Any:
    """``Decimal``/decimal-string major units -> wire amounts, for every money key."""
    return walk_money(data, lambda v: to_wire(Decimal(str(v)), currency, fmt), "", None)


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Pydantic errors as ``(field.path[0].name, rule)`` pairs, using wire names."""
    problems: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        path = ""
        for part in err["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part not in ("function-after", "function-before"):
                path += f".{part}" if path else str(part)
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        if err["type"] == "missing":
            msg = "is required"
        elif err["type"] == "extra_forbidden":
            msg = "is not a field of this request"
        elif err["type"] == "string_pattern_mismatch" and \
                (err.get("ctx") or {}).get("pattern") == NOT_BLANK_PATTERN:
            msg = "must not be blank (whitespace only)"
        # Model-level rules name their field as a "field.path: rule" prefix: join it to the
        # location so the problem names the field itself, not the object holding it.
        head, sep, rest = msg.partition(": ")
        if sep and _FIELD_PREFIX.match(head):
            path, msg = (f"{path}.{head}" if path else head), rest
        problems.append((path or "(request)", msg))
    return problems
