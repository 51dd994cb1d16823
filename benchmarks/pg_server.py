"""A throwaway PostgreSQL server for the benchmarks: the tests' own cluster (tests/pg_fixtures.py:
initdb + pg_ctl on loopback, SCRAM passwords), set up with ``walletctl history setup`` by its
owner and an operator ``alice`` granted. Yields alice's URL (no password) and the environment
entry that hands her password to libpq (PGPASSFILE); :func:`owned_history` also a way to
connect as the owner (a benchmark's bulk load)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def shared_history(work: Path) -> Iterator[tuple[str, dict[str, str]]]:
    with owned_history(work) as (url, env, _owner):
        yield url, env


@contextmanager
def owned_history(work: Path) -> Iterator[tuple[str, dict[str, str], Callable[[], Any]]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from pg_fixtures import PgCluster, find_pg_bin  # type: ignore[import-not-found,unused-ignore]

    if find_pg_bin() is None:
        raise SystemExit("PostgreSQL is not installed (Debian package `postgresql`)")
    cluster = PgCluster()
    cluster.start()
    try:
        owner = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        owner.update(PGPASSFILE=cluster.env_for("desk_owner", work / "owner")["PGPASSFILE"],
                     WALLETCTL_HISTORY_URL=cluster.url("desk_owner"),
                     PYTHONPATH=str(ROOT / "src"))
        subprocess.run([sys.executable, "-m", "walletctl", "history", "setup", "--grant",
                        "alice"], env=owner, check=True, capture_output=True)
        alice = cluster.env_for("alice", work / "alice")
        yield (cluster.url("alice"), {"PGPASSFILE": alice["PGPASSFILE"]},
               lambda: cluster.connect("desk_owner"))
    finally:
        cluster.cleanup()
