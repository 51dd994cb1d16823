"""``--output table`` (the default on a terminal): the view's human form, or its rows as a
table that fits the terminal (columns left out, named, before a word is broken)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from walletctl.render.console import escape
from walletctl.render.fit import print_table
from walletctl.render.formats import Format, RowSink, View, register
from walletctl.render.output import cell


class Table(Format):
    name = "table"
    shape = "table"

    def open(self, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
        raise ValueError("a table is not written row by row")

    def show(self, view: View) -> None:
        if view.table is not None:
            view.table()
            return
        rows = list(view.rows)
        columns = list(rows[0]) if rows else []
        print_table(escape(view.title), [escape(c.replace("_", " ")) for c in columns],
                    [[escape(cell(v)) for v in row.values()] for row in rows],
                    drop=[columns.index(c) for c in view.drop if c in columns])
        sys.stdout.flush()


register(Table())
