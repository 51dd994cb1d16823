"""Keep SQLite from checkpointing the WAL when a history connection closes.

When the last connection to a WAL database closes, SQLite copies the WAL into the database
and fsyncs it: ~10 ms on a typical disk, paid by every single command that recorded an
entry. With ``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`` the WAL is left in place (commits are
already in it and survive a killed process); SQLite's automatic checkpoint (every ~1000
pages) folds it into the database from time to time instead.

Python 3.12+ sets it with ``Connection.setconfig``. On CPython 3.11 (no ``setconfig``) it is
set through the C API with ctypes, only where that is known to be sound (Linux x86-64,
where variadic calls pass integers in registers): the handle is read from the connection
object's first field, then checked by reading the setting back and comparing the file name
SQLite reports. Anywhere else, or if any check fails, nothing is changed and the checkpoint
simply happens on close.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

NO_CKPT_ON_CLOSE = 1006  # SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (sqlite3.h)


def skip_checkpoint_on_close(db: sqlite3.Connection, path: Path) -> bool:
    """True when the setting is on for ``db``."""
    setconfig = getattr(db, "setconfig", None)
    constant = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
    if setconfig is not None and constant is not None:
        setconfig(constant, True)
        return True
    if not (sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
            and sys.platform == "linux"):
        return False
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return _via_ctypes(db, path)
    except (OSError, AttributeError, ValueError):
        return False


def _via_ctypes(db: sqlite3.Connection, path: Path) -> bool:
    import _sqlite3
    import ctypes

    lib = ctypes.CDLL(_sqlite3.__file__)  # its libsqlite3 symbols resolve through it
    handle = ctypes.c_void_p.from_address(id(db) + object.__basicsize__).value
    if not handle:
        return False
    lib.sqlite3_db_filename.restype = ctypes.c_char_p
    lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    name = lib.sqlite3_db_filename(handle, b"main")
    if name is None or Path(name.decode()).resolve() != path.resolve():
        return False
    lib.sqlite3_db_config.restype = ctypes.c_int
    if lib.sqlite3_db_config(ctypes.c_void_p(handle), ctypes.c_int(NO_CKPT_ON_CLOSE),
                             ctypes.c_int(1), None) != 0:
        return False
    check = ctypes.c_int(0)
    lib.sqlite3_db_config(ctypes.c_void_p(handle), ctypes.c_int(NO_CKPT_ON_CLOSE),
                          ctypes.c_int(-1), ctypes.byref(check))
    return check.value == 1
