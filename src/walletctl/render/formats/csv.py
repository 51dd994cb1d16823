"""``--output csv``: a header (the view's columns, else the first row's keys) and a line
per row as it comes; no tail. A cell a spreadsheet would run as a formula is kept text."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from walletctl.render.formats import Format, Row, RowSink, register
from walletctl.render.output import to_json


def csv_safe(text: str) -> str:
    """A cell a spreadsheet would run as a formula (``=``, ``+``, ``@``, a tab/CR, or ``-``
    not followed by a number) kept text by a leading ``'``."""
    if not text:
        return text
    first = text[0]
    if first in "=+@\t\r" or (first == "-" and not text[1:2].isdigit()):
        return "'" + text
    return text


def cell(value: Any) -> str:
    """A value as a cell: empty for none, an object or array as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_safe(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict | list):
        return to_json(value, indent=None)
    return csv_safe(str(value))


class CsvRows(RowSink):
    """Rows under a header, the cells split by ``delimiter``."""

    def __init__(self, columns: Sequence[str] | None, delimiter: str = ",") -> None:
        super().__init__()
        self._columns = None if columns is None else list(columns)
        self._delimiter = delimiter
        self._csv: Any = None  # the csv writer, once the columns are known
        self._cells: list[str] = []

    def _write(self, row: Row) -> None:
        if self._csv is None:
            self._header(list(row))
        self._csv.writerow([cell(row.get(k)) for k in self._cells])

    def _close(self, tail: Row | None) -> None:
        if self._csv is None and self._columns is not None:
            self._header(self._columns)  # no rows: the header alone

    def _header(self, first: list[str]) -> None:
        self._cells = self._columns or first
        self._csv = csv.writer(sys.stdout, delimiter=self._delimiter, lineterminator="\n")
        self._csv.writerow(self._cells)


class Csv(Format):
    name = "csv"
    shape = "flat"

    def open(self, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
        return CsvRows(columns)


register(Csv())
