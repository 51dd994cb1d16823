"""``walletctl history setup`` on PostgreSQL: create or upgrade the schema, grant operators.

One transaction under a lock: two owners running it at once, or one running it twice,
leave one schema at the latest version. Each grant gives SELECT and INSERT on the events
(and nothing on anything else): operators read and append, never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from walletctl.history.pg_schema import GRANTS, LATEST, MIGRATIONS, SETUP_LOCK, SetupResult
from walletctl.history.postgres import connect, why
from walletctl.history.store import StorageError

if TYPE_CHECKING:
    import psycopg

    from walletctl.config.dburl import DbUrl


def _value(db: psycopg.Connection[Any], query: str, args: Sequence[Any] = ()) -> Any:
    row = db.execute(query, args).fetchone()
    return row[0] if row else None


def setup(url: DbUrl, grants: Sequence[str]) -> SetupResult:
    import psycopg
    from psycopg import sql

    where = url.display()
    db = connect(url, purpose="walletctl history setup")
    try:
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (SETUP_LOCK,))
            owner = str(_value(db, "SELECT session_user"))
            exists = _value(db, "SELECT to_regclass('walletctl.schema_version') IS NOT NULL")
            before = int(_value(db, "SELECT coalesce(max(version), 0) FROM "
                                    "walletctl.schema_version") or 0) if exists else 0
            # the schema's owner once it exists, the database's before: nobody else
            keeper, may = db.execute(
                "SELECT r.rolname, pg_has_role(session_user, r.oid, 'USAGE') FROM pg_roles r "
                "WHERE r.oid = COALESCE((SELECT nspowner FROM pg_namespace "
                "WHERE nspname = 'walletctl'), (SELECT datdba FROM pg_database "
                "WHERE datname = current_database()))").fetchone() or (None, False)
            if not may:
                raise StorageError(
                    f"history {where}: setup is the owner's ({keeper}), not {owner}'s: "
                    "operators only read and append")
            if before > LATEST:
                raise StorageError(f"history {where}: its schema is version {before}; this "
                                   f"walletctl knows {LATEST} (upgrade walletctl)")
            applied: list[str] = []
            for version, what, body in MIGRATIONS:
                if version <= before:
                    continue
                db.execute(body.encode())  # several statements, no parameters
                db.execute("INSERT INTO walletctl.schema_version (version) VALUES (%s)",
                           (version,))
                applied.append(f"{version}: {what}")
            for role in dict.fromkeys(grants):
                if role.lower() == "public" or role.startswith("pg_"):
                    raise StorageError(
                        f"history {where}: --grant {role}: a built-in role would pass the "
                        "grant to every role in it; grant each operator's own LOGIN role")
                found = db.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s",
                                   (role,)).fetchone()
                if found is not None and found[0]:
                    raise StorageError(
                        f"history {where}: --grant {role}: a superuser can change anything, "
                        "the history too; grant operator roles without superuser")
                if found is None:
                    raise StorageError(
                        f"history {where}: --grant {role}: no such role (the database "
                        f"administrator creates it first: CREATE ROLE {role} LOGIN)")
                if role == owner:
                    raise StorageError(
                        f"history {where}: --grant {role}: that is the owner running setup; "
                        "grant operator roles, which may only read and append")
                for grant in GRANTS:
                    db.execute(sql.SQL(grant).format(role=sql.Identifier(role)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StorageError(
            f"history {where}: {why(exc)} (run setup as the database's owner)") from None
    except psycopg.Error as exc:
        raise StorageError(f"history {where}: {why(exc)}") from None
    finally:
        db.close()
    return SetupResult(before=before, after=max(before, LATEST), applied=tuple(applied),
                       granted=tuple(dict.fromkeys(grants)), owner=owner)
