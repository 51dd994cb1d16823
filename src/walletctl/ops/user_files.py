"""The files a user names. Input files (``--from-file``, ``--event``, ``--3ds``): a regular file
or ``-`` only, at most :data:`MAX_INPUT_BYTES`, JSON numbers as ``Decimal``, no duplicate key,
at most :data:`MAX_DEPTH` deep. Output files (``--journal``, ``--results``, ``--junit``,
``--json-file``): a regular file (or one to create) in a writable directory, checked before
anything is sent (exit 4 naming the option).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.errors import RequestValidationError, UsageError

MAX_INPUT_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32


def read_bytes(path: Path, flag: str, limit: int | None = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path`` (``-``: stdin); refuses special files and input over ``limit``
    bytes (None: no limit)."""
    where = str(path)
    size = -1 if limit is None else limit + 1
    try:
        if where == "-":
            data = sys.stdin.buffer.read(size)
        else:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if stat.S_ISDIR(mode):
                    raise UsageError(f"{flag}: {where} is a directory, not a file")
                if not stat.S_ISREG(mode):
                    raise UsageError(f"{flag}: {where} is not a regular file (a FIFO or device?)")
                data = fh.read(size)
    except OSError as exc:
        raise UsageError(
            f"{flag}: cannot read {where}: {exc.strerror or type(exc).__name__}"
        ) from None
    except ValueError:  # e.g. an embedded NUL in the path
        raise UsageError(f"{flag}: cannot read {where!r}: not a valid path") from None
    if limit is not None and len(data) > limit:
        raise UsageError(f"{flag}: {where} is larger than {limit // 1024 // 1024} MiB")
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


def read_document(path: Path, flag: str, *, toml: bool = False,
                  limit: int | None = MAX_INPUT_BYTES) -> Any:
    """The JSON (or TOML) document in ``path``; every problem is a one-line validation error."""
    raw, where, kind = read_bytes(path, flag, limit), str(path), "TOML" if toml else "JSON"
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


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def output_problem(path: Path, *, create_parent: bool = False,
                   write: bool = True) -> str | None:
    """Why ``path`` cannot be written as an output file, or None (``write=False``: only its
    kind is checked, for a dry run that reads an existing journal and writes nothing)."""
    shown = repr(str(path))[1:-1]  # control characters escaped
    try:
        try:
            mode = os.stat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):  # its directory is checked below
            return _new_file_problem(path.parent, create_parent) if write else None
        kind = next((what for test, what in _KINDS if test(mode)), None)
        if kind is not None:
            return f"{shown} is {kind}, not a regular file"
        if not stat.S_ISREG(mode):
            return f"{shown} is not a regular file"
        if write and not (os.access(path, os.W_OK) and _opens(path, os.O_WRONLY | os.O_APPEND)):
            return f"{shown} is not writable"
    except ValueError:  # an embedded NUL
        return f"{shown} is not a valid path"
    except OSError as exc:
        return f"{shown}: {exc.strerror or type(exc).__name__}"
    return None


def _new_file_problem(parent: Path, create_parent: bool) -> str | None:
    """Why a new file cannot be made in ``parent`` (made first with ``create_parent``)."""
    if create_parent and not parent.is_dir():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create the directory {parent}: {exc.strerror or exc}"
    if not parent.is_dir():
        return f"the directory {repr(str(parent))[1:-1]} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or not _can_create(parent):
        return f"the directory {repr(str(parent))[1:-1]} is not writable"
    return None


def _opens(path: Path, flags: int) -> bool:
    """``path`` really opens with ``flags`` (``os.access`` answers yes to root, and knows
    nothing of /proc, read-only mounts or quotas): opened and closed, nothing written."""
    try:
        os.close(os.open(path, flags, 0o600))
    except OSError:
        return False
    return True


def _can_create(parent: Path) -> bool:
    """A file can really be made in ``parent``: a probe file is made and removed."""
    probe = parent / f".walletctl-probe-{os.getpid()}-{secrets.token_hex(4)}"
    if not _opens(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL):
        return False
    probe.unlink(missing_ok=True)
    return True


def check_output(path: Path | None, flag: str, *, create_parent: bool = False,
                 write: bool = True) -> None:
    """Raise :class:`RequestValidationError` (exit 4) naming ``flag`` for a path that cannot be
    written; ``None`` (not given) passes."""
    if path is None:
        return
    problem = output_problem(path, create_parent=create_parent, write=write)
    if problem is not None:
        raise RequestValidationError([(flag, problem)])
