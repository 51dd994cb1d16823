"""``--output ndjson``: one JSON object a line, a line per row as it comes, then the view's
summary (if it has one) as the last line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from walletctl.render.formats import Format, Row, RowSink, register
from walletctl.render.output import to_json


class JsonLines(RowSink):
    def _write(self, row: Row) -> None:
        sys.stdout.write(to_json(row, indent=None) + "\n")

    def _close(self, tail: Row | None) -> None:
        if tail is not None:
            sys.stdout.write(to_json(tail, indent=None) + "\n")


class Ndjson(Format):
    name = "ndjson"
    shape = "lines"

    def open(self, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
        return JsonLines()


register(Ndjson())
