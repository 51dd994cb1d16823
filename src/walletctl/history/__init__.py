"""The history (audit log) of money-moving actions: where it lives and how it is opened.

A team's shared history is a PostgreSQL database (``WALLETCTL_HISTORY_URL``, else the
profile's ``[history] url``); one person's is a SQLite file (``WALLETCTL_AUDIT_LOG``, else
the profile's ``[history] path``, else the data directory). A file named by the environment
and a database named anywhere at once is refused: no entry may land in a local file while
the desk believes it shared. docs/history.md describes both.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.config.dburl import DbUrl, DbUrlError, parse_db_url
from walletctl.constants import Env
from walletctl.errors import ConfigError, UsageError
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import HistoryStore, StorageError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.postgres import SetupResult

__all__ = ["Located", "history_location", "locate", "open_existing", "open_for",
           "open_history", "open_location", "open_profile_history", "role_kinds",
           "set_up"]

FILE_NAME = "history.sqlite3"
INTENTS_NAME = "intents.sqlite3"


def data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("walletctl", appauthor=False))


def history_url(profile: Profile | None = None) -> DbUrl | None:
    """The shared history's database, if one is named (the environment first)."""
    env = os.environ.get(Env.HISTORY_URL)
    if env:
        try:
            return parse_db_url(env)
        except DbUrlError as exc:
            raise ConfigError(f"{Env.HISTORY_URL}: {exc}") from None
    if profile is not None and profile.history.url is not None:
        return parse_db_url(profile.history.url)  # checked when the profile was loaded
    return None


def history_location(profile: Profile | None = None) -> Path | DbUrl:
    """The database (shared), or the file: ``WALLETCTL_AUDIT_LOG``, the profile's
    ``[history] path``, the data directory."""
    url = history_url(profile)
    env = os.environ.get(Env.AUDIT_LOG)
    if env and not env.strip():  # never a file named " " in the working directory
        raise ConfigError(f"{Env.AUDIT_LOG} is blank: it must name the history file",
                          hint=f"unset {Env.AUDIT_LOG} for the default one")
    if url is not None:
        if env:
            raise ConfigError(
                f"{Env.AUDIT_LOG} names a local file while the history is the database "
                f"{url.display()}: unset one of them",
                hint=f"unset {Env.AUDIT_LOG} to record to the team's history")
        return url
    if env:
        return Path(env).expanduser().absolute()
    if profile is not None and profile.history.path is not None:
        return profile.history.path
    return data_dir() / FILE_NAME


def open_history(path: Path, *, chained: bool = True, create: bool = True) -> SqliteHistory:
    where = str(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            raise ConfigError(f"history: {where} does not exist (nothing recorded yet)") from None
    except OSError as exc:
        raise ConfigError(f"history: cannot read {where}: {exc.strerror}") from None
    else:
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"history: {where} is not a regular file")
    try:
        return SqliteHistory(path, chained=chained)
    except (OSError, StorageError, sqlite3.Error) as exc:
        raise ConfigError(
            f"history: cannot open {where}: {exc}",
            hint=f"set {Env.AUDIT_LOG} or the profile's [history] path to a writable file",
        ) from None


def open_shared(url: DbUrl, *, purpose: str = "walletctl",
                background: bool = False) -> HistoryStore:
    """``background``: connect while the command goes on (see PostgresHistory); a failure
    is raised at the history's first use, which is always before anything is sent."""
    from walletctl.history.postgres import PostgresHistory

    return PostgresHistory(url, purpose=purpose, background=background)


def open_location(where: Path | DbUrl, *, create: bool = True,
                  purpose: str = "walletctl") -> HistoryStore:
    if isinstance(where, DbUrl):
        return open_shared(where, purpose=purpose)
    return open_history(where, create=create)


def open_for(profile: Profile, *, purpose: str = "walletctl") -> HistoryStore:
    """The store money-moving commands record into: the shared history (connecting in the
    background), the local one, or (history off) the intent store. ``purpose``: what other
    operators see while this one holds an order (``walletctl refund ORDER-1``)."""
    where = history_location(profile)
    if isinstance(where, DbUrl):
        return open_shared(where, purpose=purpose, background=True)
    if profile.history.enabled:
        return open_history(where)
    return open_history(data_dir() / INTENTS_NAME, chained=False)  # the intent store


@dataclass(frozen=True)
class Located:
    """Where a profile's history is, as shown (a file's path, or the database's URL without
    its password), its backend (``sqlite`` | ``postgresql``) and whether there is one to
    read (a database always; a file once written)."""

    where: str
    backend: str
    exists: bool


def _located(where: Path | DbUrl) -> Located:
    if isinstance(where, DbUrl):
        return Located(where.display(), "postgresql", True)
    return Located(str(where), "sqlite", where.exists())


def locate(profile: Profile | None) -> Located:
    return _located(history_location(profile))


def open_profile_history(profile: Profile | None, *, purpose: str,
                         create: bool = False) -> HistoryStore:
    """The profile's history, opened to read it or to record a desk's step in it (``create``
    False: a missing file is a ConfigError, not a new file)."""
    return open_location(history_location(profile), create=create, purpose=purpose)


def open_existing(profile: Profile | None,
                  purpose: str) -> tuple[Located, HistoryStore | None]:
    """The profile's history: where, and the store opened when there is one to read."""
    where = history_location(profile)
    found = _located(where)
    if not found.exists:
        return found, None
    return found, open_location(where, create=False, purpose=purpose)


def role_kinds() -> tuple[str, ...]:
    """What ``history setup --role`` grants: operator, approver, auditor."""
    from walletctl.history.postgres import ROLE_KINDS

    return ROLE_KINDS


def set_up(profile: Profile | None, grants: Sequence[str],
           kind: str) -> tuple[Located, SetupResult]:
    """Create or migrate the profile's history; a database's roles of ``grants`` granted
    what ``kind`` may do (a file has no roles)."""
    from walletctl.history.postgres import SetupResult, setup

    where = history_location(profile)
    if not isinstance(where, DbUrl):
        if grants:
            raise UsageError("--grant: a local history file has no roles to grant (set "
                             "WALLETCTL_HISTORY_URL or [history] url to a PostgreSQL database)")
        existed = where.exists()
        open_history(where).close()
        return _located(where), SetupResult(
            before=1 if existed else 0, after=1, applied=() if existed else ("1: events",),
            granted=(), owner=None)
    return _located(where), setup(where, grants, kind)
