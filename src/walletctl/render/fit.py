"""Fitting human output to the terminal without breaking a word: tables whose columns wrap
only between words (columns left out, and named, when even that is too wide), and lines of
phrases that break between phrases."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from walletctl.render.console import cell_width, escape, out, wrap_words

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.segment import Segment
    from rich.table import Table


def terminal_width() -> int:
    return int(out().width)


def _column_span(headers: Sequence[str], rows: Sequence[Sequence[str]], i: int,
                 no_wrap: bool) -> tuple[int, int]:
    """(narrowest width keeping every word whole, width showing every cell on one line)."""
    from rich.cells import cell_len
    from rich.text import Text

    cells = [headers[i], *(r[i] for r in rows)]
    lines = [line for cell in cells for line in Text.from_markup(cell).plain.split("\n")]
    widest = max((cell_len(line) for line in lines), default=1)
    if no_wrap:
        return widest, widest
    word = max((cell_len(w) for line in lines for w in line.split()), default=1)
    return max(word, 1), max(widest, 1)


def _overhead(columns: int) -> int:
    """Cells a SIMPLE_HEAD table (pad_edge=False) adds: an edge each side, 3 between two."""
    return 2 + 3 * (columns - 1)


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]], keep: Sequence[int],
            no_wrap: set[int], width: int) -> list[int] | None:
    """Column widths that fit ``width`` with every word whole (None: none do): each column
    its longest word, then the room left to the most starved (Rich's own collapsing would
    fold a word)."""
    spans = [_column_span(headers, rows, i, i in no_wrap) for i in keep]
    room = width - _overhead(len(keep))
    widths = [low for low, _ in spans]
    if sum(widths) > room:
        return None
    left = room - sum(widths)
    while left > 0:
        needs = [high - w for w, (_, high) in zip(widths, spans, strict=True)]
        if max(needs) <= 0:
            break
        k = needs.index(max(needs))
        step = min(needs[k], left, max(1, left // len(keep)))
        widths[k] += step
        left -= step
    return widths


def _build(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]],
           keep: Sequence[int], justify: dict[int, str], no_wrap: set[int],
           widths: Sequence[int] | None = None) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    for n, i in enumerate(keep):
        table.add_column(headers[i], justify=justify.get(i, "left"),  # type: ignore[arg-type]
                         no_wrap=i in no_wrap, overflow="fold",
                         width=widths[n] if widths is not None else None)
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table


class _WithoutTopEdge:
    """``table`` printed without its top edge (a line of blanks in a SIMPLE_HEAD box)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        from rich.segment import Segment

        dropped = False
        for line in Segment.split_lines(console.render(self.table, options)):
            if not dropped and not "".join(segment.text for segment in line).strip():
                dropped = True  # the first blank line: the top edge (a title is never blank)
                continue
            yield from line
            yield Segment.line()


def natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """Columns the table needs to show every cell on one line."""
    spans = [_column_span(headers, rows, i, False) for i in range(len(headers))]
    return sum(high for _, high in spans) + _overhead(len(headers))


def fit_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
                no_wrap: Sequence[int] = (), drop: Sequence[int] = (),
                width: int) -> tuple[list[int], list[int] | None, list[int]]:
    """(the columns kept, their widths, the columns left out) for a table that fits
    ``width`` with every word whole: ``drop`` left out first, then the others from the
    right; the first column stays (widths None: even it alone is wider)."""
    keep = list(range(len(headers)))
    fixed = set(no_wrap)
    widths = _widths(headers, rows, keep, fixed, width)
    left_out: list[int] = []
    for index in [*drop, *(i for i in reversed(keep[1:]) if i not in drop)]:
        if widths is not None or len(keep) <= 1:
            break
        keep.remove(index)
        left_out.append(index)
        widths = _widths(headers, rows, keep, fixed, width)
    return keep, widths, left_out


def fit_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]], *,
              justify: dict[int, str] | None = None, no_wrap: Sequence[int] = (),
              drop: Sequence[int] = (), width: int) -> tuple[Any, list[str]]:
    """(the table fitted to ``width``, as a renderable; the headers of the columns left
    out)."""
    from rich.console import Group
    from rich.text import Text

    keep, widths, left_out = fit_columns(headers, rows, no_wrap=no_wrap, drop=drop,
                                         width=width)
    hidden = [headers[i] for i in left_out]
    parts: list[Any] = []
    span = None if widths is None else sum(widths) + _overhead(len(keep))
    if title and (span is None or Text.from_markup(title).cell_len > span):
        # a title wider than the table (a long path) is its own line(s), never folded
        heading = Text.from_markup(wrap_words(title, width, "", measure=_markup_width))
        heading.no_wrap, heading.overflow = True, "ignore"
        parts.append(heading)
        title = None
    parts.append(_WithoutTopEdge(_build(title, headers, rows, keep, justify or {},
                                        set(no_wrap), widths)))
    if hidden:
        parts.append(Text.from_markup(fit_phrases(
            [f"(hidden at {width} columns:", *(escape(h) + "," for h in hidden[:-1]),
             escape(hidden[-1]) + ";", "-o json shows every field)"], width), style="dim"))
    return Group(*parts), hidden


def print_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]], *,
                justify: dict[int, str] | None = None, no_wrap: Sequence[int] = (),
                drop: Sequence[int] = (), width: int | None = None) -> list[str]:
    """Print :func:`fit_table`'s table; returns the headers of the columns left out."""
    width = width or terminal_width()
    table, hidden = fit_table(title, headers, rows, justify=justify, no_wrap=no_wrap,
                              drop=drop, width=width)
    out().print(table, width=width, crop=False)
    return hidden


def fit_phrases(phrases: Sequence[str], width: int | None = None, indent: str = "  ") -> str:
    """``phrases`` joined, lines broken between phrases (inside one wider than ``width``:
    between its words)."""
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
    # a phrase wider than the terminal breaks between its words
    return wrap_words("\n".join(lines), width, indent, measure=_markup_width)


def fit_path(path: str, width: int) -> str:
    """``path`` within ``width`` cells: whole when it fits, else its middle elided ("…"),
    its file name kept whole (``-o json`` holds the full path). Never cut at the edge by
    the terminal, never broken inside a word."""
    if cell_width(path) <= width:
        return path
    head, sep, name = path.rpartition("/")
    tail = sep + name
    room = width - cell_width(tail) - 1
    if room < 1:  # not even the name fits: the name's own end, elided at its start
        return "…" + path[-(max(width, 2) - 1):]
    return head[:room] + "…" + tail


def print_phrases(phrases: Sequence[str], indent: str = "  ") -> None:
    """``phrases`` (Rich markup) as one line on stdout, fitted on a terminal only."""
    console = out()
    console.print(fit_phrases(phrases, indent=indent) if console.is_terminal
                  else " ".join(phrases), soft_wrap=True, crop=False, highlight=False)


def print_markup(markup: str, indent: str = "  ") -> None:
    """A line of Rich markup on stdout, broken between words on a terminal only."""
    console = out()
    console.print(wrap_words(markup, console.width, indent, measure=_markup_width)
                  if console.is_terminal else markup,
                  soft_wrap=True, crop=False, highlight=False)


def print_fields(title: str, fields: Sequence[tuple[str, str]]) -> None:
    """``title`` (markup), then a field a line: its name in bold, its text beside it, broken
    between words (a value's later lines, and its continuations, under its start)."""
    width = max((len(key) for key, _ in fields), default=0)
    print_markup(title)
    for key, text in fields:
        for n, line in enumerate(text.split("\n")):
            label = f"[bold]{escape(key):<{width}}[/bold]" if n == 0 else " " * width
            print_markup(f"  {label}  {escape(line)}", indent=" " * (width + 4))


def _markup_width(markup: str) -> int:
    """Cells ``markup`` takes on the screen: its Rich tags (even unbalanced) left out."""
    from rich.markup import RE_TAGS

    return cell_width(RE_TAGS.sub(lambda m: m.group(0) if m.group(2) else "", markup)
                      .replace("\\[", "["))
