"""The typed operations on the desk's tables beside the events (approvals and the rows they
bind, recon's findings, the rulebook), each one statement of its backend's own SQL.

:mod:`~walletctl.history.approvals`, :mod:`~walletctl.history.findings` and
:mod:`~walletctl.history.rulebook` hold the rules and call these; none of them writes SQL or
asks which backend it has. Each backend supplies its subclass (``SqliteTables`` with SQLite's
``?`` placeholders, ``PostgresTables`` with psycopg's ``%s`` and its own array look-ups),
bound to the store (reads) or to one of its write transactions (reads under the chain's
lock, and writes). Nothing here is rewritten on the way to the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Protocol

# An approval as stored, in the order read (walletctl.history.approvals.Approval's fields,
# bar the rows it binds, which are approval_rows')
APPROVAL_COLUMNS: tuple[str, ...] = (
    "id", "kind", "profile", "base_url", "merchant_id", "store_id", "operation",
    "original_ref", "new_ref", "amount", "currency", "reason", "batch_file", "batch_sha256",
    "batch_rows", "batch_totals", "batch_detail", "created_at", "expires_at", "requester",
    "requester_host", "request_hash", "state", "decided_by", "decided_at", "decision_reason",
    "spent_at", "spent_entry", "spent_batch")
# A finding as stored (walletctl.history.findings.Recorded's fields, in order)
FINDING_COLUMNS: tuple[str, ...] = (
    "id", "merchant_id", "store_id", "kind", "original", "reference", "entry", "movement_by",
    "detail", "recorded_at", "recorded_by", "state", "resolved_at", "resolved_by",
    "resolution", "resolved_entry")
RUN = 500  # values per query of a look-up by many (within every backend's parameter limit)


class Rows(Protocol):
    """What the operations run on: a store (reads) or a write transaction (both), each
    statement in its backend's own SQL."""

    def rows(self, sql: str, args: Sequence[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]: ...

    def run(self, sql: str, args: Sequence[Any] = ()) -> None: ...


def runs(values: Sequence[Any], size: int = RUN) -> Iterator[list[Any]]:
    for at in range(0, len(values), size):
        yield list(values[at:at + size])


class DeskTables:
    """The operations, their statements written with :attr:`P`, the backend's placeholder
    (each backend's subclass sets it, and replaces a statement its database answers its own
    way)."""

    P: ClassVar[str]

    def __init__(self, on: Rows) -> None:
        self.on = on

    def _marks(self, count: int) -> str:
        return ", ".join([self.P] * count)

    def _one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        for row in self.on.rows(sql, args):
            return tuple(row)
        return None

    def _count(self, sql: str, args: Sequence[Any]) -> int:
        row = self._one(sql, args)
        return int(row[0]) if row and row[0] is not None else 0

    # ---------------------------------------------------------------- approvals
    @property
    def _approvals(self) -> str:
        return f"SELECT {', '.join(APPROVAL_COLUMNS)} FROM approvals"  # noqa: S608 - constant names

    def approval(self, approval: int) -> dict[str, Any] | None:
        """The approval's row, by column (None: no such request)."""
        row = self._one(f"{self._approvals} WHERE id = {self.P}", (approval,))
        return None if row is None else dict(zip(APPROVAL_COLUMNS, row, strict=True))

    def approvals_after(self, after: int, *, limit: int, original_ref: str | None = None,
                        since: str | None = None,
                        merchant: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` requests numbered above ``after``, by id: on ``original_ref``,
        filed at or after ``since``, of the merchant's store (each filter when given)."""
        p = self.P
        sql = f"{self._approvals} WHERE id > {p}"
        args: list[Any] = [after]
        if original_ref is not None:
            sql += f" AND original_ref = {p}"
            args.append(original_ref)
        if since is not None:
            sql += f" AND created_at >= {p}"
            args.append(since)
        if merchant is not None:
            sql += f" AND merchant_id = {p} AND store_id = {p}"
            args += list(merchant)
        return [dict(zip(APPROVAL_COLUMNS, row, strict=True)) for row in self.on.rows(
            f"{sql} ORDER BY id LIMIT {int(limit)}", args)]

    def newest_approval(self) -> int:
        """The newest request's id (0: none yet)."""
        return self._count("SELECT coalesce(max(id), 0) FROM approvals", ())

    def bound_amounts(self, approval: int) -> list[tuple[str, str]]:
        """(currency, amount) of every row a batch approval binds."""
        return [(str(c), str(a)) for c, a in self.on.rows(
            f"SELECT currency, amount FROM approval_rows WHERE approval = {self.P}",  # noqa: S608 - placeholders only
            (approval,))]

    def bound_rows(self, approval: int, limit: int) -> list[tuple[int, str, str, str]]:
        """The first ``limit`` rows a batch approval binds: (line, ref, amount, currency)."""
        p = self.P
        return [(int(line), str(ref), str(amount), str(currency))
                for line, ref, amount, currency in self.on.rows(
                    "SELECT line, ref, amount, currency FROM approval_rows "  # noqa: S608 - placeholders only
                    f"WHERE approval = {p} ORDER BY line LIMIT {p}", (approval, limit))]

    def reserved_refs(self, *, merchant: tuple[str, str], original_ref: str,
                      now: str) -> set[str]:
        """The new references of requests on ``original_ref`` still pending or approved."""
        p = self.P
        return {str(row[0]) for row in self.on.rows(
            f"SELECT new_ref FROM approvals WHERE original_ref = {p} AND merchant_id = {p} "  # noqa: S608 - placeholders only
            f"AND store_id = {p} AND state IN ('pending', 'approved') AND expires_at > {p} "
            "AND new_ref IS NOT NULL", (original_ref, *merchant, now))}

    def file_approval(self, values: dict[str, Any],
                      bound: Sequence[tuple[int, str, str, str]]) -> int:
        """Insert a request (``values``: column -> value) and the rows it binds (line,
        ref, amount, currency): its id."""
        names = list(values)
        row = self._one(
            f"INSERT INTO approvals ({', '.join(names)}) VALUES "  # noqa: S608 - names only
            f"({self._marks(len(names))}) RETURNING id", list(values.values()))
        assert row is not None
        approval = int(row[0])
        self._file_bound(approval, bound)
        return approval

    def _file_bound(self, approval: int, bound: Sequence[tuple[int, str, str, str]]) -> None:
        """The rows a batch request binds: a multi-row insert per run of 100."""
        for run in runs(bound, 100):
            self.on.run(
                "INSERT INTO approval_rows (approval, line, ref, amount, currency) VALUES "  # noqa: S608 - placeholders only
                + ", ".join([f"({self._marks(5)})"] * len(run)),
                [v for one in run for v in (approval, *one)])

    def decide_approval(self, approval: int, *, state: str, by: str, at: str,
                        reason: str | None) -> None:
        """A pending request approved or refused (``state``)."""
        p = self.P
        self.on.run(f"UPDATE approvals SET state = {p}, decided_by = {p}, decided_at = {p}, "  # noqa: S608 - placeholders only
                    f"decision_reason = {p} WHERE id = {p} AND state = 'pending'",
                    (state, by, at, reason, approval))

    def spend_approval(self, approval: int, *, at: str, entry: int | None,
                       batch: str | None) -> None:
        """An approved request spent by the movement ``entry`` or the batch ``batch``."""
        p = self.P
        self.on.run(f"UPDATE approvals SET state = 'spent', spent_at = {p}, "  # noqa: S608 - placeholders only
                    f"spent_entry = {p}, spent_batch = {p} WHERE id = {p} "
                    "AND state = 'approved'", (at, entry, batch, approval))

    def spent_for(self, approval: int, *, operation: str, entry: int,
                  batch_id: str | None) -> bool:
        """Whether ``approval`` was spent for this operation's entry (or its batch)."""
        p = self.P
        return self._one(
            f"SELECT 1 FROM approvals WHERE id = {p} AND state = 'spent' AND operation = {p} "  # noqa: S608 - placeholders only
            f"AND (spent_entry = {p} OR (spent_batch IS NOT NULL AND spent_batch = {p}))",
            (approval, operation, entry, batch_id)) is not None

    def spent_undecided(self) -> list[int]:
        """Approvals spent with no approving decision in the chain, by id."""
        return [int(row[0]) for row in self.on.rows(
            "SELECT a.id FROM approvals a WHERE a.state = 'spent' AND NOT EXISTS ("
            "SELECT 1 FROM events e WHERE e.approval = a.id AND e.kind = 'begin' "
            "AND e.operation = 'approval' AND e.outcome = 'approved') ORDER BY a.id")]

    def batch_rows_begun(self, approval: int, ref: str | None, amount: str | None,
                         currency: str | None) -> int:
        """Entries begun under a batch approval for this reference, amount and currency."""
        p = self.P
        return self._count(
            f"SELECT count(*) FROM events WHERE kind = 'begin' AND approval = {p} "  # noqa: S608 - placeholders only
            f"AND original_ref = {p} AND amount = {p} AND currency = {p}",
            (approval, ref, amount, currency))

    def batch_rows_bound(self, approval: int, ref: str | None, amount: str | None,
                         currency: str | None) -> int:
        """Rows a batch approval binds of this reference, amount and currency."""
        p = self.P
        return self._count(
            f"SELECT count(*) FROM approval_rows WHERE approval = {p} AND ref = {p} "  # noqa: S608 - placeholders only
            f"AND amount = {p} AND currency = {p}", (approval, ref, amount, currency))

    # ---------------------------------------------------------------- findings
    @property
    def _findings(self) -> str:
        return f"SELECT {', '.join(FINDING_COLUMNS)} FROM findings"  # noqa: S608 - constant names

    def findings(self, merchant: tuple[str, str], *, state: str | None = None,
                 references: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """The merchant's findings by id (on these references when given; in ``state``)."""
        p = self.P
        base, args = f"{self._findings} WHERE merchant_id = {p} AND store_id = {p}", \
            list(merchant)
        if state is not None:
            base += f" AND state = {p}"
            args.append(state)
        if references is None:
            for row in self.on.rows(base + " ORDER BY id", args, stream=True):
                yield dict(zip(FINDING_COLUMNS, row, strict=True))
            return
        for run in self._by_many(sorted(set(references))):
            for row in self.on.rows(f"{base} AND reference {run[0]} ORDER BY id",
                                    [*args, *run[1]]):
                yield dict(zip(FINDING_COLUMNS, row, strict=True))

    def _by_many(self, values: list[Any]) -> Iterator[tuple[str, list[Any]]]:
        """A test of a column against many values, with its arguments: ``IN (?, ...)``
        per :data:`RUN` of them."""
        for run in runs(values):
            yield f"IN ({self._marks(len(run))})", run

    def finding(self, finding: int) -> dict[str, Any] | None:
        row = self._one(f"{self._findings} WHERE id = {self.P}", (finding,))
        return None if row is None else dict(zip(FINDING_COLUMNS, row, strict=True))

    def record_finding(self, values: dict[str, Any]) -> None:
        """Insert a finding (``values``: every column)."""
        self.on.run(f"INSERT INTO findings ({', '.join(FINDING_COLUMNS)}) VALUES "  # noqa: S608 - names only
                    f"({self._marks(len(FINDING_COLUMNS))})",
                    [values[c] for c in FINDING_COLUMNS])

    def resolve_finding(self, finding: int, *, at: str, by: str, note: str,
                        entry: int) -> None:
        """An open finding resolved, by the entry ``entry``."""
        p = self.P
        self.on.run(f"UPDATE findings SET state = 'resolved', resolved_at = {p}, "  # noqa: S608 - placeholders only
                    f"resolved_by = {p}, resolution = {p}, resolved_entry = {p} "
                    f"WHERE id = {p} AND state = 'open'", (at, by, note, entry, finding))

    def entry_makers(self, entries: Iterable[int]) -> dict[int, str]:
        """Who began each of these entries: the database role, else the OS account."""
        found: dict[int, str] = {}
        for test, args in self._by_many(sorted(set(entries))):
            found.update((int(e), str(who)) for e, who in self.on.rows(
                "SELECT entry, COALESCE(operator, os_user) FROM events WHERE kind = 'begin' "  # noqa: S608 - placeholders only
                f"AND entry {test}", args))
        return found

    # ---------------------------------------------------------------- the rulebook
    def policy(self) -> list[tuple[str, str, str | None, str | None]]:
        """Every rule: (key, value, set by, set at), by key."""
        return sorted(((str(k), str(v), None if by is None else str(by),
                        None if at is None else str(at)) for k, v, by, at in self.on.rows(
            "SELECT key, value, set_by, set_at FROM policy")), key=lambda rule: rule[0])

    def policy_value(self, key: str) -> str | None:
        row = self._one(f"SELECT value FROM policy WHERE key = {self.P}", (key,))  # noqa: S608 - placeholders only
        return None if row is None else str(row[0])

    def set_policy(self, key: str, value: str | None, *, old: str | None, by: str | None,
                   at: str) -> None:
        """Set ``key`` to ``value`` (None: unset it), its value now being ``old``."""
        p = self.P
        if value is None:
            self.on.run(f"DELETE FROM policy WHERE key = {p}", (key,))  # noqa: S608 - placeholders only
        elif old is None:
            self.on.run(f"INSERT INTO policy (key, value, set_by, set_at) VALUES "  # noqa: S608 - placeholders only
                        f"({self._marks(4)})", (key, value, by, at))
        else:
            self.on.run(f"UPDATE policy SET value = {p}, set_by = {p}, set_at = {p} "  # noqa: S608 - placeholders only
                        f"WHERE key = {p}", (value, by, at, key))

    def policy_changes(self, key: str) -> list[tuple[int, str | None]]:
        """The chain's entries that changed ``key``: (entry, its note), in order."""
        return [(int(entry), None if note is None else str(note)) for entry, note in
                self.on.rows("SELECT entry, note FROM events WHERE original_ref = "  # noqa: S608 - placeholders only
                             f"{self.P} AND kind = 'begin' AND operation = 'policy' "
                             "ORDER BY entry", (key,))]
