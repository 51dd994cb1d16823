"""The registry of output formats (``--output``): a command's result is a :class:`View`,
declared once; :func:`show` hands it to the format asked for. Each format is one module of
this package that registers a :class:`Format`: ``table``, ``json``, ``ndjson``, ``csv``.

A format has a *shape*, which says the part of a view it writes: ``table`` (the view's
human form), ``document`` (one JSON document: the view's ``document``, else its rows),
``lines`` (a record a line: the view's ``lines``, else its rows, then its ``summary``) or
``flat`` (cells under a header: the view's ``flat`` rows, else ``lines``, else ``rows``).
The data formats write the rows as they come (memory flat in their number), the first one
flushed at once."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Shape = Literal["table", "document", "lines", "flat"]
Row = Mapping[str, Any]


@dataclass(frozen=True)
class View:
    """What a command shows, declared once; each format takes the part its shape writes.

    ``rows``: the records in their JSON spelling, read once, as they come. ``columns``: a
    flat format's header (default: the first row's keys). ``title``, ``drop``: the plain
    table of the rows (``drop``: the columns left out first on a narrow terminal), unless
    ``table`` prints the human form itself. ``document``: the JSON form when it is not the
    rows; ``key``: the rows streamed as that member of a JSON document, ``members(count)``
    the members after it. ``lines``/``flat``: the rows of the line/flat formats, when they
    are not ``rows``; ``summary()``: one record after a line format's rows."""

    rows: Iterable[Row] = ()
    columns: Sequence[str] | None = None
    title: str = ""
    drop: Sequence[str] = ()
    table: Callable[[], None] | None = None
    document: Any = None
    key: str | None = None
    members: Callable[[int], Row] | None = None
    lines: Iterable[Row] | None = None
    flat: Iterable[Row] | None = None
    summary: Callable[[], Row] | None = None


class RowSink(ABC):
    """Rows written to stdout one by one (``count``: how many so far), the first flushed at
    once; ``close(tail)`` ends them (what ``tail`` becomes is the shape's: a document's
    members after the rows, a closing line, or nothing in a flat format)."""

    def __init__(self) -> None:
        self.count = 0

    def write(self, row: Row) -> None:
        self._write(row)
        self.count += 1
        if self.count == 1:
            sys.stdout.flush()  # the first row out at once, whatever comes after it

    def close(self, tail: Row | None = None) -> None:
        self._close(tail)
        sys.stdout.flush()

    @abstractmethod
    def _write(self, row: Row) -> None: ...

    @abstractmethod
    def _close(self, tail: Row | None) -> None: ...


class Format(ABC):
    """An output format: its ``name`` (the ``--output`` value) and ``shape``. A data format
    makes a :class:`RowSink` (``open``); :meth:`show` writes a view through it."""

    name: ClassVar[str]
    shape: ClassVar[Shape]

    @abstractmethod
    def open(self, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
        """A sink for rows (``columns``: a flat format's header; ``key``: a document's
        member that holds them)."""

    def show(self, view: View) -> None:
        sink = self.open(columns=view.columns, key=view.key)
        for row in rows_of(view, self.shape):
            sink.write(row)
        sink.close(tail_of(view, self.shape, sink.count))


def rows_of(view: View, shape: Shape) -> Iterable[Row]:
    """The rows a format of ``shape`` writes."""
    if shape == "flat" and view.flat is not None:
        return view.flat
    if shape in ("flat", "lines") and view.lines is not None:
        return view.lines
    return view.rows


def tail_of(view: View, shape: Shape, count: int) -> Row | None:
    """What closes the rows in a format of ``shape``, ``count`` rows written."""
    if shape == "document" and view.members is not None:
        return view.members(count)
    if shape == "lines" and view.summary is not None:
        return view.summary()
    return None


# The built-in formats: modules of this package, each imported the first time its format is
# asked for (their names are all `--help` needs; their code, CSV's and JSON's, is not).
BUILTIN: tuple[str, ...] = ("table", "json", "ndjson", "csv")
_FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Make ``fmt`` an ``--output`` value (a name is registered once)."""
    if fmt.name in _FORMATS:
        raise ValueError(f"output format {fmt.name!r} is registered already")
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    _FORMATS.pop(name, None)


def names() -> tuple[str, ...]:
    """Every ``--output`` value: the built-in ones (``table`` first), then those registered."""
    return (*BUILTIN, *(name for name in _FORMATS if name not in BUILTIN))


def get(name: str) -> Format:
    if name not in _FORMATS and name in BUILTIN:
        from importlib import import_module

        import_module(f"{__name__}.{name}")  # registers it
    try:
        return _FORMATS[name]
    except KeyError:
        raise ValueError(f"not an output format: {name}") from None


def shape(name: str) -> Shape:
    return get(name).shape


def show(view: View, fmt: str) -> None:
    """Write ``view`` in the format named ``fmt``."""
    get(fmt).show(view)


def sink(fmt: str, *, columns: Sequence[str] | None = None, key: str | None = None) -> RowSink:
    """Rows pushed one by one in the data format ``fmt`` (see :meth:`Format.open`)."""
    return get(fmt).open(columns=columns, key=key)


def write_rows(fmt: str, rows: Iterable[Row], *, columns: Sequence[str] | None = None) -> int:
    """Every row of ``rows`` in the data format ``fmt`` as it comes; how many there were."""
    out = sink(fmt, columns=columns)
    for row in rows:
        out.write(row)
    out.close()
    return out.count


def records(rows: Sequence[Row], title: str = "", *, drop: Sequence[str] = (),
            document: Any = None, table: Callable[[], None] | None = None) -> View:
    """A view of plain records: a table of them (``title``; or what ``table`` prints), the
    rows, ``document`` (default: the rows) as JSON, and a flag as ``true``/``false`` in a
    flat format."""
    return View(rows=rows, title=title, drop=drop, document=document, table=table,
                flat=[{k: str(v).lower() if isinstance(v, bool) else v for k, v in row.items()}
                      for row in rows])
