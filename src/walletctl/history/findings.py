"""Recon's findings kept in the history: recorded once, resolved once, with a note, each
step an entry of the chain in the same transaction as its row (a finding's id is the entry
that recorded it). On PostgreSQL the database keeps the same rules (``migrations/V5.sql``);
docs/history.md, "Findings on file", describes them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from walletctl.errors import RefusedError
from walletctl.history.approvals import acting_as
from walletctl.history.desk_tables import FINDING_COLUMNS
from walletctl.models.plain import escaped

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from walletctl.history.store import HistoryStore, Intent, Reader

STATES: tuple[str, ...] = ("open", "resolved")
NOTE_MAX = 500  # characters of a resolution's note


class FindingError(RefusedError):
    """A finding step refused (no such finding, resolved already, one's own movement): exit
    5, nothing changed."""


@dataclass(frozen=True)
class Recorded:
    """A finding on file, and what became of it."""

    id: int  # the chain entry that recorded it
    merchant_id: str
    store_id: str
    kind: str
    original: str
    reference: str
    entry: int  # the history entry it concerns (0: none, e.g. money moved elsewhere)
    movement_by: str | None  # who made that entry: they may not resolve it
    detail: str
    recorded_at: str
    recorded_by: str
    state: str
    resolved_at: str | None = None
    resolved_by: str | None = None
    resolution: str | None = None
    resolved_entry: int | None = None

    @property
    def identity(self) -> tuple[str, str, str, str, int]:
        return (self.merchant_id, self.store_id, self.kind, self.reference, self.entry)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


assert {f.name for f in fields(Recorded)} == set(FINDING_COLUMNS)


def identity(merchant: tuple[str, str], kind: str, reference: str,
             entry: int | None) -> tuple[str, str, str, str, int]:
    return (merchant[0], merchant[1], kind, reference, entry or 0)


def on_file(reader: Reader, merchant: tuple[str, str], *,
            references: Iterable[str] | None = None,
            state: str | None = None) -> Iterator[Recorded]:
    """The merchant's findings, oldest first (by references: oldest first per look-up):
    on these references (indexed look-ups), or all; ``state``: only open or only
    resolved."""
    for row in reader.tables.findings(merchant, state=state, references=references):
        yield Recorded(**row)


def get(reader: Reader, finding: int) -> Recorded | None:
    row = reader.tables.finding(finding)
    return Recorded(**row) if row else None


@dataclass(frozen=True)
class New:
    """A finding to record: what recon named."""

    kind: str
    original: str
    reference: str
    entry: int | None
    detail: str


def record(store: HistoryStore, merchant: tuple[str, str], found: list[New], *,
           step: Intent) -> list[Recorded]:
    """File each of ``found`` not already on file (one transaction, each with its chain
    entry: ``step`` with the finding's references and note): every finding, filed or not."""
    me = acting_as(store)
    with store.transaction(chain=True) as tx:
        known = {r.identity: r for r in on_file(tx, merchant,
                                                 references={f.reference for f in found})}
        makers = tx.tables.entry_makers({f.entry for f in found if f.entry})
        for new in found:
            key = identity(merchant, new.kind, new.reference, new.entry)
            if key in known:
                continue
            new = replace(new, detail=escaped(new.detail))  # a gateway's words, written out
            note = f"{new.kind} {new.reference}: {new.detail}"[:300]
            entry = tx.append("begin", None, vars(replace(
                step, original_ref=new.original, new_ref=new.reference, note=note)))
            row = Recorded(id=entry, merchant_id=merchant[0], store_id=merchant[1],
                           kind=new.kind, original=new.original, reference=new.reference,
                           entry=new.entry or 0, movement_by=makers.get(new.entry or 0),
                           detail=new.detail[:NOTE_MAX], recorded_at=step.time,
                           recorded_by=me, state="open")
            tx.flush()  # the entry first: the row names it
            tx.tables.record_finding(row.to_dict())
            known[key] = row
        return [known[identity(merchant, f.kind, f.reference, f.entry)] for f in found]


def resolve(store: HistoryStore, finding: int, *, merchant: tuple[str, str], note: str,
            step: Intent) -> Recorded:
    """Close an open finding with ``note``, as someone other than whoever made the movement
    it concerns; the step is an entry of the chain, in the same transaction."""
    me = acting_as(store)
    with store.transaction(chain=True) as tx:
        found = get(tx, finding)
        refuse_to_resolve(found, finding, merchant=merchant, me=me, where=store.where)
        assert found is not None
        entry = tx.append("begin", None, vars(replace(
            step, original_ref=found.original, new_ref=found.reference,
            reason=note, note=f"resolved finding #{finding}: {found.kind} "
                              f"{found.reference}"[:300])))
        tx.flush()
        tx.tables.resolve_finding(finding, at=step.time, by=me, note=note, entry=entry)
    done = get(store, finding)
    assert done is not None
    return done


def refuse_to_resolve(found: Recorded | None, finding: int, *, merchant: tuple[str, str],
                      me: str, where: str) -> None:
    if found is None or (found.merchant_id, found.store_id) != merchant:
        raise FindingError(f"finding #{finding}: no such finding of this merchant in history "
                           f"{where}", hint="`walletctl recon findings` lists them")
    if found.state != "open":
        raise FindingError(f"finding #{finding} was resolved by {found.resolved_by} at "
                           f"{found.resolved_at}: a finding is resolved once")
    if found.movement_by is None and found.recorded_by == me:
        raise FindingError(f"finding #{finding} is about money moved with no desk entry, "
                           f"recorded by {me}: another approver resolves it (four eyes)")
    if found.movement_by is not None and found.movement_by == me:
        raise FindingError(f"finding #{finding} is about {me}'s own movement (entry "
                           f"#{found.entry}): another approver resolves it (four eyes)")
