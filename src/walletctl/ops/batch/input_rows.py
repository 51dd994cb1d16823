"""Batch input: CSV (header row) or JSON Lines, streamed row by row and validated; nothing here
touches the network or the journal. A line is at most :data:`MAX_LINE` bytes and a CSV field
at most :data:`MAX_FIELD` characters (``lookup --batch`` reads its files the same way): a
longer line is read through, never held, and handed on as an empty line whose row the reader
reports (:class:`BoundedLines`).
"""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, Literal

from walletctl.errors import UsageError
from walletctl.models.fields import check_reference
from walletctl.models.money import check_currency, parse_major
from walletctl.models.operations import NAMES
from walletctl.models.operations import Op as Op  # re-exported: the batch modules use it

OPS: tuple[Op, ...] = NAMES

COLUMNS = ("ref", "amount", "currency", "new_ref", "profile")
REQUIRED = ("ref", "amount")
STDIN = "<stdin>"  # the name of spooled stdin in messages
_PROFILE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_LINE = 64 * 1024  # bytes of one input line
MAX_FIELD = MAX_LINE  # characters of one CSV field (csv.field_size_limit, set deliberately)
_STEP = 64 * 1024
TOO_LONG = f"longer than {MAX_LINE:,} bytes (a batch line's limit)"


class BoundedLines:
    """Decoded lines of ``fh`` (UTF-8, a leading BOM dropped), each at most MAX_LINE bytes.

    ``errors`` is the decoding policy: ``strict`` raises :class:`UnicodeDecodeError` (a
    money batch refuses such a file), ``replace`` shows the bad bytes as U+FFFD.
    """

    def __init__(self, fh: BinaryIO, *, errors: str = "strict") -> None:
        self.fh = fh
        self.errors = errors
        self.number = 0  # lines read so far
        self.too_long: list[int] = []  # numbers of the lines longer than the limit

    def __iter__(self) -> Iterator[str]:
        first = True
        while raw := self.fh.readline(MAX_LINE + 1):
            self.number += 1
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
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


def csv_reader(lines: BoundedLines, *, strict: bool = False) -> Any:
    """``csv.reader`` over bounded lines, with the field limit set to :data:`MAX_FIELD` (a
    longer field is a ``csv.Error`` the caller reports on its line)."""
    if csv.field_size_limit() != MAX_FIELD:
        csv.field_size_limit(MAX_FIELD)
    return csv.reader(lines, strict=strict)


def csv_lines(text: BoundedLines, reader: Any, *, stop_on_error: bool,
              ) -> Iterator[tuple[int, list[str] | None, str]]:
    """(line, values, "") of the non-blank records ``reader`` reads from ``text``, and
    (line, None, problem) for an over-long line or a record csv refuses (``stop_on_error``:
    the last thing read)."""
    reported = 0
    while True:
        try:
            values = next(reader)
        except StopIteration:
            values = None
        except csv.Error as exc:  # a field over the limit, a NUL
            yield reader.line_num, None, f"not valid CSV ({exc})"
            if stop_on_error:
                return
            values = []
        while reported < len(text.too_long):  # over-long lines read as empty ones
            yield text.too_long[reported], None, TOO_LONG
            reported += 1
        if values is None:
            return
        if any(v.strip() for v in values):
            yield reader.line_num, values, ""


def json_lines(text: BoundedLines) -> Iterator[tuple[int, Any, str]]:
    """(line, its JSON value, "") of the non-blank lines of ``text``, and (line, None,
    problem) for an over-long line or one that is not JSON."""
    from walletctl.models.base import loads

    for raw in text:
        line = text.number
        if text.too_long and text.too_long[-1] == line:
            yield line, None, TOO_LONG
        elif raw.strip():
            try:
                data, problem = loads(raw), ""
            except (ValueError, RecursionError) as exc:
                data, problem = None, f"not valid JSON ({str(exc.args[0]).split(':')[0]})"
            yield line, data, problem


@dataclass(frozen=True, slots=True)
class Row:
    """One validated batch row. ``line`` is 1-based in the input (the CSV header is line 1)."""

    line: int
    ref: str
    amount: Decimal
    currency: str
    new_ref: str | None = None
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """A row that cannot be sent: ``line N: field: rule``. ``whole_file``: the file itself
    cannot be read as a batch (its header, its encoding, CSV that stops being read), which
    ``--skip-invalid`` never skips."""

    line: int
    field: str
    rule: str
    whole_file: bool = False

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.rule}"


def detect_format(path: Path, first_bytes: bytes) -> Literal["csv", "jsonl"]:
    """By extension (.csv / .jsonl / .ndjson / .json), else by the first non-blank character."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    stripped = first_bytes.lstrip(b"\xef\xbb\xbf \t\r\n")
    return "jsonl" if stripped[:1] == b"{" else "csv"


def check_ref(value: str) -> str:
    """A reference obeys the request model's own rule (models.fields.check_reference): what
    a row accepts is exactly what the request that is built from it accepts."""
    if not value:
        raise ValueError("is required")
    return check_reference(value)


_NO_CURRENCY = "is required (no currency column value and no profile currency)"


def _given(value: Any) -> Any:
    """None for a field left out or empty."""
    return None if value is None or value == "" else value


def _string(value: Any, missing: str = "is required") -> str:
    if value is None:
        raise ValueError(missing)
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def validate_fields(
    line: int, data: dict[str, Any], default_currency: str | None
) -> Row | Problem:
    """Check one row's fields; the first broken field wins (one message per row)."""
    name = "ref"
    try:
        ref = _string(_given(data.get("ref")))
        check_ref(ref)
        name = "currency"
        raw = _given(data.get("currency"))
        currency = check_currency(_string(_given(default_currency) if raw is None else raw,
                                          _NO_CURRENCY))
        name = "amount"
        raw = _given(data.get("amount"))
        if raw is None:
            raise ValueError("is required")
        amount = parse_major(raw.strip() if isinstance(raw, str) else raw, currency)
        if amount <= 0:
            raise ValueError("must be greater than zero")
        name = "new_ref"
        new_ref = _given(data.get("new_ref"))
        if new_ref is not None:
            check_ref(_string(new_ref))
            if new_ref == ref:
                raise ValueError("must differ from ref (the original's reference)")
        name = "profile"
        profile = _given(data.get("profile"))
        if profile is not None and not (isinstance(profile, str) and _PROFILE.fullmatch(profile)):
            raise ValueError("must be a profile name (letters, digits, _ . -)")
    except ValueError as exc:
        return Problem(line, name, str(exc))
    return Row(line, ref, amount, currency, new_ref, profile)


def _csv_rows(
    text: BoundedLines, default_currency: str | None
) -> Iterator[Row | Problem]:
    reader = csv_reader(text, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        yield Problem(1, "(header)", f"not valid CSV ({exc})", whole_file=True)
        return
    names = [h.strip().lower().lstrip("\ufeff") for h in header]
    if (bad := _header_problem(text, names)) is not None:
        yield bad
        return
    for line, values, problem in csv_lines(text, reader, stop_on_error=True):
        if values is None:  # a record csv refuses ends the reading: the rest is unread
            yield Problem(line, "(row)", problem, whole_file=problem != TOO_LONG)
        elif len(values) != len(names):
            yield Problem(line, "(row)", f"has {len(values)} fields, the header has {len(names)}")
        else:
            yield validate_fields(line, dict(zip(names, values, strict=True)), default_currency)


def _header_problem(text: BoundedLines, names: list[str]) -> Problem | None:
    unknown = [n for n in names if n not in COLUMNS]
    missing = [c for c in REQUIRED if c not in names]
    if text.too_long:
        return Problem(1, "(header)", TOO_LONG, whole_file=True)
    if len(names) == 1 and (sep := next((c for c in ";\t|" if c in names[0]), None)):
        shown = "tab" if sep == "\t" else sep
        return Problem(1, "(header)", f"is one column: the file looks {shown}-separated; a "
                       f"batch CSV separates its columns with commas", whole_file=True)
    if unknown:
        return Problem(1, f"column {unknown[0][:40]!r}",
                       f"unknown column (expected {', '.join(COLUMNS)})", whole_file=True)
    if missing:
        return Problem(1, f"column {missing[0]!r}", "is required in the header row",
                       whole_file=True)
    if len(set(names)) != len(names):
        return Problem(1, "(header)", "a column is named twice", whole_file=True)
    return None


def _jsonl_rows(text: BoundedLines, default_currency: str | None) -> Iterator[Row | Problem]:
    for line, data, problem in json_lines(text):
        if problem:
            yield Problem(line, "(row)", problem)
            continue
        if not isinstance(data, dict):
            yield Problem(line, "(row)", "must be a JSON object")
            continue
        keys = {str(k).lower(): v for k, v in data.items()}
        unknown = [k for k in keys if k not in COLUMNS]
        if unknown:
            yield Problem(
                line, unknown[0][:40], f"is not a batch field (expected {', '.join(COLUMNS)})"
            )
            continue
        amount = keys.get("amount")
        if isinstance(amount, float):  # loads never yields floats; keep the rule explicit
            yield Problem(line, "amount", "must be a string or integer amount, not a float")
            continue
        yield validate_fields(line, keys, default_currency)


def iter_rows(path: Path, *, default_currency: str | None = None) -> Iterator[Row | Problem]:
    """Stream validated rows (or problems) from ``path``; holds one bounded line at a time."""
    with path.open("rb") as fh:
        head = fh.read(512)
    kind = detect_format(path, head)
    with path.open("rb") as raw:
        text = BoundedLines(raw)
        try:
            if kind == "csv":
                yield from _csv_rows(text, default_currency)
            else:
                yield from _jsonl_rows(text, default_currency)
        except UnicodeDecodeError:
            yield Problem(text.number, "(file)", "is not UTF-8 text", whole_file=True)


def batch_input(source: Path, scratch: Path) -> tuple[Path, str]:
    """``--batch FILE|-``: the file to read and its name for messages. Stdin is copied into
    ``scratch`` (validation reads the input twice; stdin can be read once)."""
    if str(source) == "-":
        spooled = scratch / "stdin"
        with spooled.open("wb") as out:
            while chunk := sys.stdin.buffer.read(1 << 16):
                out.write(chunk)
        return spooled, STDIN
    if not source.is_file():
        raise UsageError(f"--batch {source}: {_not_a_file(source)}")
    return source, str(source)


def _not_a_file(source: Path) -> str:
    """Why ``source`` (not a regular file) cannot be read as rows: what it is, or missing."""
    import stat

    try:
        mode = os.stat(source).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or "not a valid path"
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISSOCK, "a socket"))
    kind = next((what for test, what in kinds if test(mode)), "something else")
    return f"{kind}, not a file"
