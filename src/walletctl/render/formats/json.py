"""``--output json``: exactly one JSON document on stdout and nothing else: the view's
document, or its rows as an array written as they come, byte for byte what
:func:`~walletctl.render.output.write_json` prints for the whole list."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from walletctl.render.formats import Format, Row, RowSink, View, register
from walletctl.render.output import json_default, to_json, write_json


class JsonArray(RowSink):
    """An array (with ``key``: the first member of a document, ``close``'s ``tail`` the
    members after it)."""

    def __init__(self, key: str | None = None) -> None:
        super().__init__()
        self._key = key
        self._pad = "  " * (1 if key is None else 2)
        sys.stdout.write("[" if key is None else f"{{\n  {to_json(key)}: [")

    def _write(self, row: Row) -> None:
        sys.stdout.write(("\n" if not self.count else ",\n") + _json_row(row, self._pad))

    def _close(self, tail: Row | None) -> None:
        out = sys.stdout
        out.write(("\n" + self._pad[2:] if self.count else "") + "]")
        if self._key is not None:
            out.write("".join(f",\n  {to_json(k)}: {_nested(v, 1)}"
                              for k, v in (tail or {}).items()) + "\n}")
        out.write("\n")


_NESTING = frozenset({dict, list, tuple})


def _json_row(row: Mapping[str, Any], pad: str) -> str:
    """``row`` as :func:`to_json` prints it, ``pad`` further in. A flat row (no object or
    array in it, what listings hold) goes through json's C encoder: ``indent`` would take
    the pure-Python one, five times slower."""
    if not row or not _NESTING.isdisjoint(map(type, row.values())):
        return pad + to_json(row).replace("\n", "\n" + pad)
    inner = pad + "  "
    body = json.dumps(row, default=json_default, ensure_ascii=False,
                      separators=(",\n" + inner, ": "))
    return f"{pad}{{\n{inner}{body[1:-1]}\n{pad}}}"


def _nested(value: Any, depth: int) -> str:
    """``value`` as :func:`to_json` prints it inside a document, ``depth`` levels down."""
    return to_json(value).replace("\n", "\n" + "  " * depth)


class Json(Format):
    name = "json"
    shape = "document"

    def open(self, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
        return JsonArray(key)

    def show(self, view: View) -> None:
        if view.document is not None:
            write_json(view.document)
        else:
            super().show(view)


register(Json())
