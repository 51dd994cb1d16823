"""Fitting human output to the terminal without breaking a word.

``print_table``: a Rich table whose columns may wrap only between words. When the narrowest
table that keeps every word whole is still wider than the terminal, the columns named in
``drop`` are left out, in that order, and a note says which (``-o json`` keeps everything).

``fit_phrases``: a one-line result made of phrases ("Captured 15.00 EUR of REF", "as NEW:",
"Approved (CapturedByProvider)") that breaks between phrases, never inside one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletctl.render.console import out


def terminal_width() -> int:
    return int(out().width)


def _build(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]],
           keep: Sequence[int], justify: dict[int, str], no_wrap: set[int]) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    for i in keep:
        table.add_column(headers[i], justify=justify.get(i, "left"),  # type: ignore[arg-type]
                         no_wrap=i in no_wrap, overflow="fold")
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table


def _min_width(table: Any) -> int:
    from rich.measure import Measurement

    console = out()  # measured unclamped: Measurement.get caps the minimum at the width given
    return int(Measurement.get(console, console.options.update_width(10_000), table).minimum)


def natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """Columns the table needs to show every cell on one line."""
    from rich.measure import Measurement

    table = _build(None, headers, rows, range(len(headers)), {}, set())
    console = out()
    return int(Measurement.get(console, console.options.update_width(10_000), table).maximum)


def print_table(
    title: str | None,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    justify: dict[int, str] | None = None,
    no_wrap: Sequence[int] = (),
    drop: Sequence[int] = (),
    width: int | None = None,
) -> list[str]:
    """Print the table; returns the headers of the columns left out to fit ``width``."""
    width = width or terminal_width()
    keep = list(range(len(headers)))
    hidden: list[str] = []
    table = _build(title, headers, rows, keep, justify or {}, set(no_wrap))
    for index in drop:
        if _min_width(table) <= width or len(keep) <= 1:
            break
        keep.remove(index)
        hidden.append(headers[index])
        table = _build(title, headers, rows, keep, justify or {}, set(no_wrap))
    console = out()
    console.print(table, width=width)
    if hidden:
        from rich.markup import escape

        console.print(fit_phrases([f"(hidden at {width} columns:", escape(", ".join(hidden))
                                   + ";", "-o json shows every field)"], width),
                      style="dim", soft_wrap=True)
    return hidden


def fit_phrases(phrases: Sequence[str], width: int | None = None, indent: str = "  ") -> str:
    """Join ``phrases`` with spaces, breaking lines between phrases only (Rich markup kept)."""
    from rich.text import Text

    width = width or terminal_width()
    lines: list[str] = []
    current = ""
    for phrase in phrases:
        if not current:
            current = phrase
            continue
        candidate = f"{current} {phrase}"
        if Text.from_markup(candidate).cell_len <= width:
            current = candidate
        else:
            lines.append(current)
            current = indent + phrase
    if current:
        lines.append(current)
    return "\n".join(lines)
