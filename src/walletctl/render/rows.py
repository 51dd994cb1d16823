"""Generic rows (settings, checks, sandbox ledgers) as a table, JSON, NDJSON or CSV.

Tables fit the terminal: columns shrink to their longest word, never break one; when even
that is too wide, the columns named in ``drop_order`` are left out (the JSON/CSV forms keep
everything). Piped output is never padded: JSON, NDJSON and CSV have no alignment spaces.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from walletctl.render.fit import print_table
from walletctl.render.output import emit, write_rows


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if value is True:
        return "*"
    if value is False:
        return ""
    return str(value)


def _csv_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def emit_rows(rows: Sequence[dict[str, Any]], fmt: str, title: str = "", *,
              drop_order: Sequence[str] = (), document: Any = None) -> None:
    """Write ``rows``; ``document`` (default: the rows) is the JSON form."""
    if fmt == "csv":
        if rows:
            write_rows("csv", ({k: _csv_value(v) for k, v in row.items()} for row in rows))
        return

    def table() -> None:
        from rich.markup import escape

        columns = list(rows[0]) if rows else []
        print_table(escape(title), [escape(c.replace("_", " ")) for c in columns],
                    [[escape(cell(v)) for v in row.values()] for row in rows],
                    drop=[columns.index(c) for c in drop_order if c in columns])
        sys.stdout.flush()

    emit(fmt, rows, document=document, table=table)
