"""Strict reading of request bodies, shared by every JSON route of the sandbox.

* :func:`parse_json` - UTF-8 only, JSON only (no ``NaN``/``Infinity``), no key given twice
  with the same spelling, nesting at most :data:`MAX_DEPTH` levels, numbers as ``Decimal``,
  no lone surrogate (``"\udcff"``) in any key or string: such text cannot be stored, compared
  or answered.
* :func:`read_body` - a JSON route's one reading: :func:`parse_object` + :func:`check_numbers`;
  :func:`read_model` then validates the result with the route's model
  (:mod:`walletctl.sandbox.requests`).
* :func:`check_numbers` - every money field is ASCII digits with an optional decimal point
  (no sign but a minus, which the model then refuses), at most :data:`MAX_DIGITS` digits, no
  exponent; a minor-units sandbox refuses a decimal point; a decimal sandbox refuses more
  fraction digits than the currency has. Every integer field (:data:`INT_KEYS`) is a JSON
  integer literal: never a string, a boolean, a fraction or exponent (``900.0``, ``9e2``),
  ``-0`` or more than :data:`_INT_TEXT_MAX` digits; the model then checks its range.

Cost: a JSON number is kept as the ``int`` of at most :data:`_INT_TEXT_MAX` digits or as a
``Decimal`` (both made in time linear in its text); nothing here or in the models converts a
``Decimal`` that an integer field refused, so ``1e999999999`` costs what its 11 characters do.

Every problem raises :class:`~walletctl.sandbox.replies.SandboxError` (400) naming the field.
"""

from __future__ import annotations

import json
import re
import secrets
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from walletctl.errors import RequestValidationError
from walletctl.models.base import MONEY_KEYS, WireModel, fold_key
from walletctl.models.money import exponent
from walletctl.sandbox.replies import SandboxError, invalid_body

if TYPE_CHECKING:
    from starlette.requests import Request

M = TypeVar("M", bound=WireModel)

MAX_DEPTH = 32
MAX_DIGITS = 18  # minor units of any amount fit a signed 64-bit integer
# the integer fields of the sandbox's request models (int32 in the spec), folded
INT_KEYS = frozenset({"redirecturltimeout", "productquantity", "messageexpiryseconds"})
_AMOUNT = re.compile(r"-?([0-9]+)(?:\.([0-9]+))?", re.ASCII)
_INT_TEXT_MAX = 64  # longer JSON integers are kept as Decimal (int() would refuse > 4300)


class _Duplicate(ValueError):
    pass


class _Constant(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Constant(name)


def _int(text: str) -> int | Decimal:
    """A JSON integer literal: an ``int``, or a ``Decimal`` when it is long or ``-0`` (which
    no integer field takes, and money reads as text)."""
    return int(text) if len(text) <= _INT_TEXT_MAX and text != "-0" else Decimal(text)


def _depth_ok(data: Any) -> bool:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                return False
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return True


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate_at(data: Any) -> str | None:
    """The path of the first key or string holding a lone surrogate, else None."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not _is_text(node):
                return path or "(request)"
        elif isinstance(node, dict):
            for key, value in node.items():
                if not _is_text(key):
                    return f"{path}.(key)" if path else "(key)"
                stack.append((value, f"{path}.{key}" if path else key))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def parse_json(raw: bytes, *, where: str = "(request)") -> Any:
    """Decode a request body strictly; raise SandboxError(400) naming the rule."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SandboxError(400, f"{where}: the body is not UTF-8 text") from None
    try:
        data = json.loads(text, parse_float=Decimal, parse_int=_int,
                          parse_constant=_constant, object_pairs_hook=_pairs)
    except _Duplicate as exc:
        raise SandboxError(400, f"{exc.args[0]}: given twice (each key may appear once "
                           "per object)") from None
    except _Constant as exc:
        raise SandboxError(400, f"{where}: {exc.args[0]} is not a JSON number") from None
    except RecursionError:
        raise SandboxError(400, f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        raise SandboxError(400, f"{where}: the body is not valid JSON") from None
    if not _depth_ok(data):
        raise SandboxError(400, f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    if "\\u" in text and (bad := _surrogate_at(data)) is not None:
        raise SandboxError(400, f"{bad}: contains a lone UTF-16 surrogate escape (\\ud800-"
                           "\\udfff without its pair), which is not text")
    return data


def parse_object(raw: bytes, *, where: str = "(request)") -> dict[str, Any]:
    """:func:`parse_json` for a body that must be a JSON object (empty = error)."""
    if not raw.strip():
        raise SandboxError(400, f"{where}: a JSON body is required")
    data = parse_json(raw, where=where)
    if not isinstance(data, dict):
        raise SandboxError(400, f"{where}: the body must be a JSON object")
    return data


def read_body(raw: bytes, fmt: str, *, where: str = "(request)") -> dict[str, Any]:
    """The one reading of a JSON route's body: a strict JSON object with strict amounts."""
    data = parse_object(raw, where=where)
    check_numbers(data, fmt)
    return data


async def read_model(request: Request, model: type[M], *, where: str = "(request)") -> M:
    """A JSON route's one reading of its body: :func:`read_body`, then the route's model."""
    fmt = request.app.state.ctx.config.amount_format
    return parse_model(model, read_body(await request.body(), fmt, where=where), fmt)


def parse_model(model: type[M], data: dict[str, Any], fmt: str) -> M:
    """``data`` as ``model``; a 400 naming the fields and rules it breaks."""
    try:
        return model.from_wire(data, fmt)  # type: ignore[arg-type]
    except RequestValidationError as exc:
        raise invalid_body(exc) from None
    except (ValueError, TypeError, RecursionError):
        raise SandboxError(400, "(request): the body could not be read") from None


def _get(data: Any, name: str) -> Any:
    if isinstance(data, dict):
        for key, value in data.items():
            if fold_key(key) == name.lower():
                return value
    return None


def _minor_hint(text: str, currency: str) -> str:
    places = exponent(currency)
    whole, _, fraction = text.lstrip("+").partition(".")
    example = ""
    if len(fraction) <= places:
        minor = int(whole + fraction.ljust(places, "0"))
        example = f" (\"{minor}\" for {text} {currency})"
    return (f"{text} has a decimal point, but this sandbox reads amounts in minor units"
            f"{example}; set amount_format = minor in the walletctl profile, or serve the "
            "sandbox with --amount-format decimal")


def check_amount(value: Any, path: str, currency: str, fmt: str) -> None:
    """Refuse an amount the sandbox could misread; see the module docstring."""
    if isinstance(value, bool):
        raise SandboxError(400, f"{path}: must be an amount, not a boolean")
    if isinstance(value, Decimal):
        exp = value.as_tuple().exponent
        if not isinstance(exp, int) or exp > 0:
            raise SandboxError(400, f"{path}: must be written without an exponent")
        if exp < -MAX_DIGITS:
            raise SandboxError(400, f"{path}: at most {MAX_DIGITS} digits")
        text = format(value, "f")
    elif isinstance(value, int | str):
        text = str(value)
    else:
        raise SandboxError(400, f"{path}: must be an amount (a string of digits)")
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise SandboxError(400, f"{path}: must be ASCII digits with an optional decimal point")
    whole, fraction = match.group(1), match.group(2) or ""
    if len(whole.lstrip("0")) + len(fraction) > MAX_DIGITS:
        raise SandboxError(400, f"{path}: larger than any currency amount (at most "
                           f"{MAX_DIGITS} digits)")
    if fmt == "minor" and match.group(2) is not None:
        raise SandboxError(400, f"{path}: {_minor_hint(text, currency)}")
    places = exponent(currency)
    if fmt == "decimal" and len(fraction) > places:
        raise SandboxError(400, f"{path}: {currency} amounts have {places} decimal "
                           f"place{'s' if places != 1 else ''} (this sandbox reads decimal "
                           "amounts: amount_format = decimal)")


def integer_problem(value: Any) -> str | None:
    """Why ``value`` (parsed by :func:`parse_json`) is not a JSON integer, else None. Reads
    only its type and exponent: never converts it."""
    if isinstance(value, bool):
        return "must be an integer, not a boolean"
    if isinstance(value, int) or value is None or isinstance(value, dict | list):
        return None  # the range, null and other types: the model's rules
    if isinstance(value, Decimal):
        if value.is_zero() and value.is_signed() and value.as_tuple().exponent == 0:
            return "must be an integer: 0, not -0"
        if len(value.as_tuple().digits) > _INT_TEXT_MAX:
            return f"must be an integer of at most {_INT_TEXT_MAX} digits"
        return "must be an integer: digits only, no fraction or exponent"
    if isinstance(value, str):
        return "must be an integer (a JSON number), not a string"
    return "must be an integer"


def check_numbers(data: Any, fmt: str) -> None:
    """Walk a parsed body: strict money fields, strict integer fields."""
    currency = _get(data, "currencyCode")
    cur = currency.upper() if isinstance(currency, str) else "EUR"
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                sub = f"{path}.{key}" if path else str(key)
                low = fold_key(key)
                if low in MONEY_KEYS and value is not None and not isinstance(value, dict | list):
                    check_amount(value, sub, cur, fmt)
                elif low in INT_KEYS and (problem := integer_problem(value)) is not None:
                    raise SandboxError(400, f"{sub}: {problem}")
                elif isinstance(value, dict | list):
                    stack.append((value, sub))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node)
                         if isinstance(v, dict | list))


_MARK = f"\u0001amount{secrets.token_hex(8)}:"
_MARKED = re.compile('"' + re.escape(json.dumps(_MARK)[1:-1]) + r'([0-9.+-]+)\\u0001"')


def _marked(record: Any) -> Any:
    value = record.get("transactionAmount") if isinstance(record, dict) else None
    if isinstance(value, str) and _AMOUNT.fullmatch(value):
        return {**record, "transactionAmount": f"{_MARK}{value}\u0001"}
    return record


def amounts_as_numbers(data: list[dict[str, Any]] | dict[str, Any]) -> bytes:
    """JSON of lookup records (a list), or of an answer holding records as values (the admin
    decision's ``record``), with each record's ``transactionAmount`` a JSON number (spec 2.5
    types it decimal), written from its exact decimal text (never through a float): one type
    wherever a record is answered."""
    out = ([_marked(rec) for rec in data] if isinstance(data, list)
           else {key: _marked(value) for key, value in data.items()})
    text = json.dumps(out, separators=(",", ":"))
    return _MARKED.sub(lambda m: m.group(1), text).encode()
