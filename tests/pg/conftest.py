"""A support desk as a team: one sandbox (the ``desk`` fixture of the money tests), one
shared history in a real PostgreSQL database, and three people, each on "their own machine":
a HOME, profiles file, data directory, runtime directory (so this machine's money locks are
NOT shared between them) and ~/.pgpass of their own, and their own database role.

``team`` -> :class:`Team` with ``owner`` (``desk_owner``, who ran ``walletctl history setup
--grant alice --grant bob``, as operators and as approvers), ``alice`` and ``bob``; each an
:class:`Operator` whose ``run`` is ``python -m walletctl`` with that person's environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from money.conftest import WALLETCTL, Desk, Result, desk, served_sandbox  # noqa: F401 - fixtures
from pg_fixtures import PgCluster, PgDesk


@dataclass
class Operator:
    role: str
    env: dict[str, str]
    desk: Desk

    def run(self, *argv: str, expect: int | Sequence[int] | None = None,
            timeout: float = 60, env: dict[str, str] | None = None) -> Result:
        return self.desk.run(*argv, expect=expect, timeout=timeout,
                             env={**self.env, **(env or {})})

    def popen(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*WALLETCTL, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                env={**self.desk.env, **self.env})


@dataclass
class Team:
    desk: Desk
    cluster: PgCluster
    db: str
    owner: Operator
    alice: Operator
    bob: Operator

    def url(self, role: str) -> str:
        return self.cluster.url(role, self.db)


def person(shop: Desk, cluster: PgCluster, db: str, role: str, home: Path) -> Operator:
    """``role`` on a machine of their own (``home``), reaching the shared history at ``db``."""
    home.mkdir(parents=True, exist_ok=True)
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    profiles = home / "profiles.toml"  # their own copy of the desk's profiles
    shutil.copyfile(shop.env["WALLETCTL_CONFIG"], profiles)
    os.chmod(profiles, 0o600)
    env = {
        **cluster.env_for(role, home),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_RUNTIME_DIR": str(runtime),
        "WALLETCTL_CONFIG": str(profiles), "WALLETCTL_HISTORY_URL": cluster.url(role, db),
        "WALLETCTL_AUDIT_LOG": "",  # the shared history only
    }
    return Operator(role, env, shop)


def make_team(shop: Desk, cluster: PgCluster, db: str, tmp: Path) -> Team:
    owner, alice, bob = (person(shop, cluster, db, role, tmp / role)
                         for role in ("desk_owner", "alice", "bob"))
    owner.run("history", "setup", "--grant", "alice", "--grant", "bob", expect=0)
    owner.run("history", "setup", "--grant", "alice", "--grant", "bob", "--role", "approver",
              expect=0)
    return Team(shop, cluster, db, owner, alice, bob)


@pytest.fixture
def team(desk: Desk, pg_desk: PgDesk, tmp_path: Path) -> Team:  # noqa: F811 - the fixture
    return make_team(desk, pg_desk.cluster, pg_desk.db, tmp_path / "team")
