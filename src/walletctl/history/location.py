"""Where the history lives and how it is opened (one-line errors, never a traceback)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.constants import Env
from walletctl.errors import ConfigError
from walletctl.history.store import HistoryStore

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

FILE_NAME = "history.sqlite3"
INTENTS_NAME = "intents.sqlite3"


def data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("walletctl", appauthor=False))


def history_path(profile: Profile | None = None) -> Path:
    """``WALLETCTL_AUDIT_LOG``, else the profile's ``[history] path``, else the data dir."""
    env = os.environ.get(Env.AUDIT_LOG)
    if env:
        return Path(env).expanduser().absolute()
    if profile is not None and profile.history.path is not None:
        return profile.history.path
    return data_dir() / FILE_NAME


def intents_path() -> Path:
    """The minimal intent store used when a profile turns the history off."""
    return data_dir() / INTENTS_NAME


def open_history(path: Path, *, chained: bool = True, create: bool = True) -> HistoryStore:
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
        return HistoryStore(path, chained=chained)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(
            f"history: cannot open {where}: {exc}",
            hint=f"set {Env.AUDIT_LOG} or the profile's [history] path to a writable file",
        ) from None


def open_for(profile: Profile) -> HistoryStore:
    """The store money-moving commands record into: the history, or the intent store."""
    if profile.history.enabled:
        return open_history(history_path(profile))
    return open_history(intents_path(), chained=False)
