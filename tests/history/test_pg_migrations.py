"""The shared history's migrations are released SQL: what each runs stays byte for byte as
it was released (a database V1..V5 migrated must still open, and a database migrated later
must end in the same schema), under the same version numbers."""

from __future__ import annotations

import hashlib

from walletctl.history.postgres import CHAIN_LOCK, LATEST, MIGRATIONS, migration_sql

RELEASED = {
    1: "05d86a32735ec7ae3f239c2e259f435557f46d5b6df6b9962672f77c649ee339",
    2: "4b31f3e6dd4c997aed1e19f1205674f02486491f2653d27a99db00e105938378",
    3: "3ae1d5a99dfe16788a410f1d8dd94f8c32fa8cfb3b48d4653fa631fba9ac4896",
    4: "b034d6c6452207c26c9b97b36106990c79ad27880d54f9cf4362ae43416a0fa7",
    5: "45e9517c77044ec1bf48bcd14404b3eede09b8817d2544e8e7d24e429a10d34c",
    6: "0ec57d46191cf8289a3bd3c4926a5ebd85a298f1c6be55f0118e696f7362417a",
    7: "191f744e18d2f1165a629fb942fd9fc7e27275c0ebe90d9fc913756633c0ddc2",
    8: "e09bead4e8021eba6e26ef4c3117347657269a9555cb1b16f2a3b47e0b122ef4",
    9: "739089ae7ea82e3d11c07fb97fc809de03e4e53fa34e94bd6f6bb893901b103a",
}


def test_each_released_migration_runs_the_sql_it_was_released_with() -> None:
    versions = [version for version, _what in MIGRATIONS]
    assert versions == list(range(1, LATEST + 1))
    assert set(RELEASED) == set(versions)  # each one pinned as it is released
    for version, sha256 in RELEASED.items():
        assert hashlib.sha256(migration_sql(version)).hexdigest() == sha256, version


def test_the_chain_lock_the_client_takes_is_the_one_the_trigger_takes() -> None:
    assert f"pg_advisory_xact_lock({CHAIN_LOCK}, 0)".encode() in migration_sql(1)
