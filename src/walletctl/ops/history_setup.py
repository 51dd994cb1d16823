"""``walletctl history setup``: make the history ready (and, on PostgreSQL, let operators in).

On PostgreSQL the database owner runs it once per schema version: it creates or upgrades the
schema and grants each ``--grant`` role reading and appending, no more. On a local file it
creates the file (a file has no roles to grant).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.config.dburl import DbUrl
from walletctl.errors import UsageError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

# A role name as `CREATE ROLE` takes it unquoted (it is quoted anyway when granted).
ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.-]{0,62}")


@dataclass(frozen=True)
class SetUp:
    history: str  # where (a file's path, or the database without a password)
    backend: str  # sqlite | postgresql
    before: int  # schema version found (0: none)
    after: int
    applied: tuple[str, ...]
    granted: tuple[str, ...]
    owner: str | None  # the role that ran it (PostgreSQL)


def set_up(profile: Profile | None, grants: Sequence[str]) -> SetUp:
    from walletctl.history import history_location

    for role in grants:
        if not ROLE.fullmatch(role):
            raise UsageError(f"--grant: {role[:40]!r} is not a role name (letters, digits, "
                             "_ $ . -, starting with a letter or _; at most 63)")
    where = history_location(profile)
    if not isinstance(where, DbUrl):
        if grants:
            raise UsageError("--grant: a local history file has no roles to grant (set "
                             "WALLETCTL_HISTORY_URL or [history] url to a PostgreSQL database)")
        from walletctl.history import open_history

        existed = where.exists()
        open_history(where).close()
        return SetUp(history=str(where), backend="sqlite", before=1 if existed else 0,
                     after=1, applied=() if existed else ("1: events",), granted=(),
                     owner=None)
    from walletctl.history.postgres import setup

    done = setup(where, grants)
    return SetUp(history=where.display(), backend="postgresql", before=done.before,
                 after=done.after, applied=done.applied, granted=done.granted,
                 owner=done.owner)
