"""Writers for the data formats: one JSON document, NDJSON lines, CSV, or a Rich table.

``--output json`` prints exactly one JSON document on stdout and nothing else.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    raise TypeError(f"cannot encode {type(value).__name__}")


def to_json(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, default=_default, indent=indent, ensure_ascii=False)


def write_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")
    sys.stdout.flush()


def write_ndjson(rows: Iterable[Any]) -> None:
    for row in rows:
        sys.stdout.write(to_json(row, indent=None) + "\n")
    sys.stdout.flush()


def write_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> None:
    cols = list(columns or (rows[0].keys() if rows else []))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in cols})
    sys.stdout.write(buf.getvalue())
    sys.stdout.flush()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict | list):
        return to_json(value, indent=None)
    return csv_safe(str(value))


def csv_safe(text: str) -> str:
    """Neutralise spreadsheet formulas in text that came from the gateway.

    A cell starting with ``=``, ``+``, ``@``, a tab/CR, or ``-`` not followed by a number
    is run as a formula when the CSV is opened in a spreadsheet; a leading ``'`` keeps it
    text. Amounts are written from ``Decimal`` and never pass through here.
    """
    if not text:
        return text
    first = text[0]
    if first in "=+@\t\r" or (first == "-" and not text[1:2].isdigit()):
        return "'" + text
    return text


def emit(
    fmt: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    document: Any = None,
    columns: Sequence[str] | None = None,
    table: Any = None,
) -> None:
    """Write ``rows`` in ``fmt``; ``document`` (default ``rows``) is the JSON form, ``table``
    a zero-argument callable that prints the human form."""
    if fmt == "ndjson":
        write_ndjson(rows)
    elif fmt == "csv":
        write_csv(rows, columns)
    elif fmt == "json" or table is None:
        write_json(rows if document is None else document)
    else:
        table()


def render_dry_run(output_format: str, described: list[dict[str, Any]]) -> None:
    """The exact request(s) that would be sent (secrets already masked); nothing is sent."""
    if output_format == "ndjson":  # one line per request
        for d in described:
            sys.stdout.write(to_json({"dryRun": True, "request": d}, indent=None) + "\n")
        return
    if output_format == "json":
        doc = ({"dryRun": True, "requests": described} if len(described) > 1
               else {"dryRun": True, "request": described[0]})
        sys.stdout.write(to_json(doc) + "\n")
        return
    for d in described:
        sys.stdout.write(f"{d['method']} {d['url']}\n")
        for name, value in d["headers"].items():
            sys.stdout.write(f"{name}: {value}\n")
        if d["body"] is not None:
            sys.stdout.write("\n" + to_json(d["body"]) + "\n")
    sys.stderr.write("walletctl: dry run: nothing was sent\n")


def write_text(text: str) -> None:
    """A document as it is (a shipped file, a script, a profile) on stdout, flushed: what
    comes after it (a note, an error) follows it."""
    sys.stdout.write(text)
    sys.stdout.flush()
