"""Reading a user's input file (``--from-file``, ``--event``, ``--3ds``) safely.

* only a regular file (or ``-`` for stdin) is read: a FIFO, ``/dev/zero`` or a socket is
  refused at once ("not a regular file") instead of hanging;
* at most :data:`MAX_INPUT_BYTES`;
* JSON numbers become ``Decimal``; a duplicate key is refused (which one would win is
  a guess); nesting deeper than :data:`MAX_DEPTH` is refused (no ``RecursionError``).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.errors import RequestValidationError, UsageError

MAX_INPUT_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32


def read_bytes(path: Path, flag: str) -> bytes:
    """The bytes of ``path`` (``-``: stdin); refuses special files and oversized input."""
    where = str(path)
    try:
        if where == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if stat.S_ISDIR(mode):
                    raise UsageError(f"{flag}: {where} is a directory, not a file")
                if not stat.S_ISREG(mode):
                    raise UsageError(f"{flag}: {where} is not a regular file (a FIFO or device?)")
                data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise UsageError(
            f"{flag}: cannot read {where}: {exc.strerror or type(exc).__name__}"
        ) from None
    except ValueError:  # e.g. an embedded NUL in the path
        raise UsageError(f"{flag}: cannot read {where!r}: not a valid path") from None
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"{flag}: {where} is larger than {MAX_INPUT_BYTES // 1024 // 1024} MiB")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key[:60]!r}")
        result[key] = value
    return result


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a JSON/TOML value, counted up to ``limit + 1`` (iteratively)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


def parse_document(raw: bytes, flag: str, where: str, *, toml: bool = False) -> Any:
    """JSON (or TOML) text -> data; every problem is a one-line validation error."""
    kind = "TOML" if toml else "JSON"
    try:
        text = raw.decode("utf-8")
        if toml:
            import tomllib

            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text, parse_float=Decimal, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise RequestValidationError([(f"{flag} {where}", "is not UTF-8 text")]) from None
    except RecursionError:
        raise RequestValidationError(
            [(f"{flag} {where}", f"nested deeper than {MAX_DEPTH} levels")]
        ) from None
    except ValueError as exc:  # JSONDecodeError, TOMLDecodeError, duplicate keys
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise RequestValidationError([(f"{flag} {where}", f"invalid {kind}: {reason}")]) from None
    if depth(data) > MAX_DEPTH:
        raise RequestValidationError(
            [(f"{flag} {where}", f"nested deeper than {MAX_DEPTH} levels")]
        )
    return data


def read_document(path: Path, flag: str, *, toml: bool = False) -> Any:
    return parse_document(read_bytes(path, flag), flag, str(path), toml=toml)
