"""Files walletctl writes (``--journal``, ``--results``, ``--junit``, ``--json-file``), checked
before anything is sent.

A path is written only when it is a regular file (or one to be created) in a directory that
exists and is writable. A directory, a FIFO (it would block until someone reads it), a
character or block device (``/dev/full``: every write fails, after the money moved) or a socket
is refused at once, exit 4 naming the option; nothing was sent.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from walletctl.errors import RequestValidationError

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
            mode = None
        if mode is not None:
            for test, what in _KINDS:
                if test(mode):
                    return f"{shown} is {what}, not a regular file"
            if not stat.S_ISREG(mode):
                return f"{shown} is not a regular file"
            if write and not os.access(path, os.W_OK):
                return f"{shown} is not writable"
            return None
        parent = path.parent
        if not write:
            return None
        if create_parent and not parent.is_dir():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return f"cannot create the directory {parent}: {exc.strerror or exc}"
        if not parent.is_dir():
            return f"the directory {repr(str(parent))[1:-1]} does not exist"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"the directory {repr(str(parent))[1:-1]} is not writable"
    except ValueError:  # an embedded NUL
        return f"{shown} is not a valid path"
    except OSError as exc:
        return f"{shown}: {exc.strerror or type(exc).__name__}"
    return None


def check_output(path: Path | None, flag: str, *, create_parent: bool = False,
                 write: bool = True) -> None:
    """Raise :class:`RequestValidationError` (exit 4) naming ``flag`` for a path that cannot be
    written; ``None`` (not given) passes."""
    if path is None:
        return
    problem = output_problem(path, create_parent=create_parent, write=write)
    if problem is not None:
        raise RequestValidationError([(flag, problem)])
