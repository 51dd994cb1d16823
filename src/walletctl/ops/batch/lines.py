"""Batch input files read a bounded line at a time (``capture|refund|reverse --batch``,
``lookup --batch``).

A line (a CSV row or a JSON Lines object) is at most :data:`MAX_LINE` bytes and a CSV field at
most :data:`MAX_FIELD` characters. A longer line is never held in memory: it is read through
in 64 KiB steps, counted in :attr:`BoundedLines.too_long`, and handed on as an empty line (so
line numbers stay right), whose row the reader reports. A 1 GiB file of NULs with no line
break is therefore read in constant memory and reported as one line that is too long.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any, BinaryIO

MAX_LINE = 64 * 1024  # bytes of one input line
MAX_FIELD = MAX_LINE  # characters of one CSV field (csv.field_size_limit, set deliberately)
_STEP = 64 * 1024


class BoundedLines:
    """Decoded lines of ``fh`` (UTF-8, a leading BOM dropped), each at most ``limit`` bytes.

    ``errors`` is the decoding policy: ``strict`` raises :class:`UnicodeDecodeError` (a
    money batch refuses such a file), ``replace`` shows the bad bytes as U+FFFD.
    """

    def __init__(self, fh: BinaryIO, *, limit: int = MAX_LINE, errors: str = "strict") -> None:
        self.fh = fh
        self.limit = limit
        self.errors = errors
        self.number = 0  # lines read so far
        self.too_long: list[int] = []  # numbers of the lines longer than the limit

    def __iter__(self) -> Iterator[str]:
        first = True
        while raw := self.fh.readline(self.limit + 1):
            self.number += 1
            if len(raw) > self.limit and not raw.endswith(b"\n"):
                while (rest := self.fh.readline(_STEP)) and not rest.endswith(b"\n"):
                    pass  # the rest of an over-long line: read through, never kept
                self.too_long.append(self.number)
                yield "\n"
                continue
            text = raw.decode("utf-8", self.errors)
            if first:
                text = text.removeprefix("\ufeff")
                first = False
            yield text

    def problem(self) -> str:
        return f"longer than {MAX_LINE:,} bytes (a batch line's limit)"


def csv_reader(lines: BoundedLines, *, strict: bool = False) -> Any:
    """``csv.reader`` over bounded lines, with the field limit set to :data:`MAX_FIELD` (a
    longer field is a ``csv.Error`` the caller reports on its line)."""
    if csv.field_size_limit() != MAX_FIELD:
        csv.field_size_limit(MAX_FIELD)
    return csv.reader(lines, strict=strict)
