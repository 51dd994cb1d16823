"""Writers for the data formats: one JSON document, NDJSON lines, CSV, or a Rich table.
``--output json`` prints exactly one JSON document on stdout and nothing else."""

from __future__ import annotations

import csv
import itertools
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from walletctl.render.console import escape
from walletctl.render.fit import print_table

_Row = TypeVar("_Row")


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    raise TypeError(f"cannot encode {type(value).__name__}")


def to_json(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, default=_default, indent=indent, ensure_ascii=False)


def write_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")
    sys.stdout.flush()


class RowStream:
    """A listing written to stdout as its rows come (memory flat in their number), the
    first one flushed at once. ``json``: an array, byte for byte what :func:`write_json`
    prints for the whole list (with ``key``: the first member of a document, ``close``'s
    ``tail`` the members after it); ``ndjson``: a line per row, then ``tail``; ``csv``: a
    header (``columns``, else the first row's keys) and a line per row, no ``tail``."""

    def __init__(self, fmt: str, *, columns: Sequence[str] | None = None,
                 key: str | None = None) -> None:
        if fmt not in ("json", "ndjson", "csv"):
            raise ValueError(f"not a data format: {fmt}")
        self.fmt = fmt
        self.count = 0  # rows written
        self._columns = None if columns is None else list(columns)
        self._csv: Any = None  # the csv writer, once the columns are known
        self._cells: list[str] = []
        self._key = key
        self._pad = "  " * (1 if key is None else 2)
        if fmt == "json":
            sys.stdout.write("[" if key is None else f"{{\n  {to_json(key)}: [")

    def write(self, row: Mapping[str, Any]) -> None:
        out = sys.stdout
        if self.fmt == "ndjson":
            out.write(to_json(row, indent=None) + "\n")
        elif self.fmt == "json":
            out.write(("\n" if not self.count else ",\n") + _json_row(row, self._pad))
        else:
            if self._csv is None:
                self._csv_writer(list(row))
            self._csv.writerow([_cell(row.get(k)) for k in self._cells])
        self.count += 1
        if self.count == 1:
            out.flush()  # the first row out at once, whatever comes after it

    def close(self, tail: Mapping[str, Any] | None = None) -> None:
        out = sys.stdout
        if self.fmt == "json":
            out.write(("\n" + self._pad[2:] if self.count else "") + "]")
            if self._key is not None:
                out.write("".join(f",\n  {to_json(k)}: {_nested(v, 1)}"
                                  for k, v in (tail or {}).items()) + "\n}")
            out.write("\n")
        elif self.fmt == "ndjson" and tail is not None:
            out.write(to_json(tail, indent=None) + "\n")
        elif self.fmt == "csv" and self._csv is None and self._columns is not None:
            self._csv_writer(self._columns)  # no rows: the header alone
        out.flush()

    def _csv_writer(self, first: list[str]) -> None:
        self._cells = self._columns or first
        self._csv = csv.writer(sys.stdout, lineterminator="\n")
        self._csv.writerow(self._cells)


_NESTING = frozenset({dict, list, tuple})


def _json_row(row: Mapping[str, Any], pad: str) -> str:
    """``row`` as :func:`to_json` prints it, ``pad`` further in. A flat row (no object or
    array in it, what listings hold) goes through json's C encoder: ``indent`` would take
    the pure-Python one, five times slower."""
    if not row or not _NESTING.isdisjoint(map(type, row.values())):
        return pad + to_json(row).replace("\n", "\n" + pad)
    inner = pad + "  "
    body = json.dumps(row, default=_default, ensure_ascii=False,
                      separators=(",\n" + inner, ": "))
    return f"{pad}{{\n{inner}{body[1:-1]}\n{pad}}}"


def _nested(value: Any, depth: int) -> str:
    """``value`` as :func:`to_json` prints it inside a document, ``depth`` levels down."""
    return to_json(value).replace("\n", "\n" + "  " * depth)


def first_rows(rows: Iterable[_Row], n: int) -> tuple[list[_Row], int]:
    """The first ``n`` of ``rows`` (what a table shows) and how many there were in all."""
    found = iter(rows)
    kept = list(itertools.islice(found, n))
    return kept, len(kept) + sum(1 for _ in found)


def write_rows(fmt: str, rows: Iterable[Mapping[str, Any]], *,
               columns: Sequence[str] | None = None) -> int:
    """Every row of ``rows`` as it comes (see :class:`RowStream`); how many there were."""
    stream = RowStream(fmt, columns=columns)
    for row in rows:
        stream.write(row)
    stream.close()
    return stream.count


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_safe(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict | list):
        return to_json(value, indent=None)
    return csv_safe(str(value))


def csv_safe(text: str) -> str:
    """A cell a spreadsheet would run as a formula (``=``, ``+``, ``@``, a tab/CR, or ``-``
    not followed by a number) kept text by a leading ``'``."""
    if not text:
        return text
    first = text[0]
    if first in "=+@\t\r" or (first == "-" and not text[1:2].isdigit()):
        return "'" + text
    return text


def emit(fmt: str, rows: Iterable[Mapping[str, Any]], *, document: Any = None,
         columns: Sequence[str] | None = None, table: Any = None) -> None:
    """Write ``rows`` in ``fmt`` as they come; ``document`` (default: the rows, streamed) is
    the JSON form, ``table`` a zero-argument callable that prints the human form."""
    if fmt in ("ndjson", "csv") or ((table is None or fmt == "json") and document is None):
        write_rows("json" if fmt == "table" else fmt, rows, columns=columns)
    elif fmt == "json" or table is None:
        write_json(document)
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


def emit_rows(rows: Sequence[dict[str, Any]], fmt: str, title: str = "", *,
              drop_order: Sequence[str] = (), document: Any = None) -> None:
    """Write ``rows``; ``document`` (default: the rows) is the JSON form."""
    if fmt == "csv":
        if rows:
            write_rows("csv", ({k: str(v).lower() if isinstance(v, bool) else v
                                for k, v in row.items()} for row in rows))
        return

    def table() -> None:
        columns = list(rows[0]) if rows else []
        print_table(escape(title), [escape(c.replace("_", " ")) for c in columns],
                    [[escape(cell(v)) for v in row.values()] for row in rows],
                    drop=[columns.index(c) for c in drop_order if c in columns])
        sys.stdout.flush()

    emit(fmt, rows, document=document, table=table)
