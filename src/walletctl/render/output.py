"""What every format's writer shares: JSON encoding (a Decimal as its digits), a listing's
first rows, flattened records, cells and times as tables show them, a document written as
it is, and a dry run's requests. The formats themselves: :mod:`walletctl.render.formats`."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

_Row = TypeVar("_Row")


def json_default(value: Any) -> Any:
    """A Decimal as its digits (``json.dumps``'s ``default``)."""
    if isinstance(value, Decimal):
        return format(value, "f")
    raise TypeError(f"cannot encode {type(value).__name__}")


def to_json(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, default=json_default, indent=indent, ensure_ascii=False)


def write_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")
    sys.stdout.flush()


def first_rows(rows: Iterable[_Row], n: int) -> tuple[list[_Row], int]:
    """The first ``n`` of ``rows`` (what a table shows) and how many there were in all."""
    found = iter(rows)
    kept = list(itertools.islice(found, n))
    return kept, len(kept) + sum(1 for _ in found)


def write_text(text: str) -> None:
    """A document as it is (a shipped file, a script, a profile) on stdout, flushed."""
    sys.stdout.write(text)
    sys.stdout.flush()


def flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects' keys dotted (``record.transactionAmount``)."""
    row: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            row.update(flat(value, f"{prefix}{key}."))
        else:
            row[f"{prefix}{key}"] = value
    return row


def minute(stamp: str | None) -> str:
    """``2026-11-22 09:30`` of an ISO time (empty for none)."""
    return (stamp or "")[:16].replace("T", " ")


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if value is True:
        return "*"
    if value is False:
        return ""
    return str(value)
