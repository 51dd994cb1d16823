"""Four eyes: approval requests kept beside the history, in the same file or database.

A request is bound to the exact movement it would send (:meth:`Request.digest`); another
operator decides it; the requester's run with ``--approval ID`` spends it in the transaction
that records the intent. Every step is an entry of the chain (docs/history.md, "Four eyes").

    pending --approve (another operator)--> approved --spend (the requester)--> spent
       |                                       (until expires_at; after it: expired)
       +--refuse (another operator)--> refused

On PostgreSQL a trigger checks the same rules against the authenticated roles
(``migrations/V2.sql``, ``V3.sql``); a local file's "who" is the OS account, which is weaker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from walletctl.errors import RefusedError
from walletctl.history import recorder
from walletctl.history.desk_tables import APPROVAL_COLUMNS
from walletctl.history.store import HistoryStore, Intent, Reader, Transaction, WriteHook
from walletctl.models.money import format_major

DETAIL_ROWS = 200  # bound rows shown with a batch request
Kind = Literal["single", "batch"]
STATES: tuple[str, ...] = ("pending", "approved", "refused", "spent", "expired")


class ApprovalError(RefusedError):
    """An approval step refused (not approved, spent, expired, another request, one's own
    request): nothing was sent. Exit 5, like every pre-flight refusal."""


@dataclass(frozen=True)
class Request:
    """What an approval is asked for: the exact movement (or batch file) to be sent."""

    kind: Kind
    profile: str
    base_url: str
    merchant_id: str
    store_id: str
    operation: str
    original_ref: str | None = None
    new_ref: str | None = None
    amount: str | None = None  # major units, as the history writes them
    currency: str | None = None
    reason: str | None = None
    batch_file: str | None = None  # the file's name as given (for people)
    batch_sha256: str | None = None  # the file's content: what is bound
    batch_rows: int | None = None  # rows to send
    batch_totals: str | None = None  # per currency, e.g. "1,250.00 EUR; 90.00 USD"
    batch_detail: str | None = None  # JSON: the rows above the approval amount (shown)
    # a batch's rows above the approval amount, bound one by one: (line, ref, amount,
    # currency); kept in approval_rows, and a run sends no row above the amount outside them
    bound_rows: tuple[tuple[int, str, str, str], ...] = ()

    def digest(self) -> str:
        """sha256 of what reaches the gateway or binds a file (never the profile's name or
        URL); PostgreSQL computes the same from the stored fields."""
        return bound_hash({name: getattr(self, name) for name in BOUND})

    def differences(self, other: Approval) -> list[str]:
        """The bound fields in which ``other`` (what was approved) differs from this."""
        return [f"{n.replace('batch_sha256', 'file sha256')}: approved "
                f"{getattr(other, n) or '(none)'}, now {getattr(self, n) or '(none)'}"
                for n in BOUND[1:] if getattr(self, n) != getattr(other, n)]


# What an approval binds, in the order hashed (the database hashes the same list).
BOUND: tuple[str, ...] = ("kind", "merchant_id", "store_id", "operation", "original_ref",
                          "new_ref", "amount", "currency", "reason", "batch_sha256")


def bound_hash(values: dict[str, Any]) -> str:
    """sha256 of what an approval binds (:data:`BOUND`, in order), as the database hashes
    it: a request's digest, and what a bundle's check recomputes offline."""
    body = json.dumps([values.get(name) for name in BOUND], ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class Approval(Request):
    """One filed request and what became of it."""

    id: int = 0
    created_at: str = ""
    expires_at: str = ""
    requester: str = ""
    requester_host: str | None = None
    request_hash: str = ""
    state: str = "pending"
    decided_by: str | None = None
    decided_at: str | None = None
    decision_reason: str | None = None
    spent_at: str | None = None
    spent_entry: int | None = None
    spent_batch: str | None = None

    def status(self, now: str) -> str:
        """Its state now: a pending or approved request past its expiry is ``expired``."""
        if self.state in ("pending", "approved") and self.expires_at <= now:
            return "expired"
        return self.state

    def what(self) -> str:
        """One line for people: ``refund of 150.00 EUR on ORDER-1 as ORDER-1-REF1``; a
        batch's rows and totals as read (:func:`get`): those of its bound rows."""
        if self.kind == "batch":
            return (f"{self.operation} batch {self.batch_file} ({self.batch_rows} bound "
                    f"rows above the approval amount, {self.batch_totals})")
        money = f" of {self.amount} {self.currency}" if self.amount else ""
        return f"{self.operation}{money} on {self.original_ref} as {self.new_ref}"

    def to_dict(self, now: str) -> dict[str, Any]:
        found = asdict(self)
        found["state"] = self.status(now)
        # who approved it (decided_by is also who refused one)
        found["approver"] = self.decided_by if self.state in ("approved", "spent") else None
        found["batch_detail"] = json.loads(self.batch_detail) if self.batch_detail else None
        return found


NEWS_CHANNEL = "walletctl_approvals"  # V7's trigger announces each new request's id here
POLL_S = 0.5  # a history file is read for new requests this often (approvals --watch)
_REQUEST_COLUMNS = tuple(f.name for f in fields(Request) if f.name != "bound_rows")
assert {f.name for f in fields(Approval)} - {"bound_rows"} == set(APPROVAL_COLUMNS)


def _row(row: dict[str, Any]) -> Approval:
    return Approval(**row)


def acting_as(store: HistoryStore) -> str:
    """Who is acting: the authenticated database role, else this machine's OS account."""
    return store.operator() or recorder.os_user()


def file_request(store: HistoryStore, request: Request, *, now: str, expires_at: str,
                 host: str) -> Approval:
    """File a pending request (committed): the approval with its id."""
    values = {**{n: getattr(request, n) for n in _REQUEST_COLUMNS},
              "created_at": now, "expires_at": expires_at, "requester": acting_as(store),
              "requester_host": host, "request_hash": request.digest(), "state": "pending"}
    with store.transaction() as tx:
        approval = tx.tables.file_approval(values, request.bound_rows)
    found = get(store, approval)
    assert found is not None
    return found


# The largest key either database holds (a signed 64-bit integer): a larger id is no request,
# on SQLite (whose driver cannot even send it) as on PostgreSQL.
_LARGEST_ID = 2**63 - 1


def get(reader: Reader, approval: int, *, detail: bool = True) -> Approval | None:
    """The approval; ``detail``: a batch's with the rows it binds (:func:`_shown`)."""
    if not 0 < approval <= _LARGEST_ID:
        return None
    row = reader.tables.approval(approval)
    if row is None:
        return None
    return _shown(reader, _row(row)) if detail else _row(row)


def _shown(store: Reader, found: Approval) -> Approval:
    """A batch approval as its approver sees it: what a run can send, computed from the rows
    the database bound (approval_rows), never from text the requester wrote. Its rows
    (``batch_rows``) and totals (``batch_totals``) are the bound rows' count and sums per
    currency, its detail the first :data:`DETAIL_ROWS` of them."""
    if found.kind != "batch":
        return found
    count = 0
    sums: dict[str, Decimal] = {}
    for currency, amount in store.tables.bound_amounts(found.id):
        count += 1
        try:
            sums[str(currency)] = sums.get(str(currency), Decimal(0)) + Decimal(amount)
        except (InvalidOperation, TypeError):
            sums[str(currency)] = Decimal("NaN")  # shown as such: nothing to approve
    rows = [{"line": line, "ref": ref, "amount": amount, "currency": currency}
            for line, ref, amount, currency in store.tables.bound_rows(found.id, DETAIL_ROWS)]
    detail = {"above": count, "rows": rows}
    totals = "; ".join(_money(sums[c], c) for c in sorted(sums)) or "nothing bound"
    return replace(found, batch_rows=count, batch_totals=totals,
                   batch_detail=json.dumps(detail, separators=(",", ":")))


def _money(amount: Decimal, currency: str) -> str:
    try:
        return format_major(amount, currency)
    except (ArithmeticError, KeyError, ValueError):
        return f"{amount} {currency}"


LISTING_PAGE = 500  # requests per read of :func:`listing`


def listing(store: HistoryStore, *, now: str, state: str | None = None,
            since: str | None = None, merchant: tuple[str, str] | None = None,
            original_ref: str | None = None) -> Iterator[Approval]:
    """Requests, oldest first; ``state`` as :meth:`Approval.status` tells it;
    ``original_ref``: only those on this order. Read a page at a time by id, each page read
    whole (a batch's rows are read between pages on a connection that streams one query)."""
    after = 0
    while True:
        page = [_row(row) for row in store.tables.approvals_after(
            after, limit=LISTING_PAGE, original_ref=original_ref, since=since,
            merchant=merchant)]
        for found in page:
            if state is None or found.status(now) == state:
                yield _shown(store, found)
        if len(page) < LISTING_PAGE:
            return
        after = page[-1].id


def newest_id(store: HistoryStore) -> int:
    """The newest request's id (0: none yet)."""
    return store.tables.newest_approval()


def watch(store: HistoryStore, *, after: int, merchant: tuple[str, str] | None = None,
          every: float = POLL_S) -> Iterator[Approval]:
    """Each request filed after id ``after``, as it is filed (never ending: the caller
    stops it). Between reads the store waits for news (:meth:`HistoryStore.wait_for_news`:
    a shared history's NOTIFY, a file's poll every ``every`` seconds)."""
    with store.listening(NEWS_CHANNEL):
        while True:
            page = [_row(row) for row in store.tables.approvals_after(
                after, limit=LISTING_PAGE, merchant=merchant)]
            for found in page:
                yield _shown(store, found)
            if page:
                after = page[-1].id
            if len(page) < LISTING_PAGE:
                store.wait_for_news(every)


def reserved_refs(store: HistoryStore, *, merchant: tuple[str, str], original_ref: str,
                  now: str) -> frozenset[str]:
    """The new references of open (pending or approved) requests on ``original_ref``: a
    derived reference skips them, so the approved one is still free when it is sent."""
    return frozenset(store.tables.reserved_refs(merchant=merchant, original_ref=original_ref,
                                                now=now))


def checked(store: HistoryStore, approval: int, *, merchant: tuple[str, str]) -> Approval:
    """The approval, if it exists and is the given merchant's (else ApprovalError)."""
    found = _existing(store, store, approval)
    if (found.merchant_id, found.store_id) != merchant:
        raise ApprovalError(
            f"approval #{approval} is for merchant {found.merchant_id} store "
            f"{found.store_id}, not this profile's {merchant[0]} store {merchant[1]}",
            hint="use a profile of that merchant and store (-p NAME)")
    return found


def decide(store: HistoryStore, approval: int, *, approve: bool, reason: str | None,
           now: str, step: Intent) -> Approval:
    """Approve or refuse a pending request, as someone other than its requester; the step
    is written to the history in the same transaction (``step``: its entry, completed)."""
    me = acting_as(store)
    with store.transaction(chain=True) as tx:
        found = _existing(store, tx, approval, detail=False)
        refuse_to_decide(found, me=me, now=now, approve=approve)
        tx.tables.decide_approval(approval, state="approved" if approve else "refused",
                                  by=me, at=now, reason=reason)
        tx.append("begin", None, vars(replace(step, approval=approval)))
    done = get(store, approval)
    assert done is not None
    return done


def refuse_to_decide(found: Approval, *, me: str, now: str, approve: bool) -> None:
    """Raise ApprovalError unless ``me`` may approve (or refuse) ``found`` now: someone
    other than its requester, while it is pending and not expired."""
    verb = "approve" if approve else "refuse"
    if found.requester == me:
        raise ApprovalError(f"approval #{found.id}: {me} filed it and may not {verb} it "
                            "(four eyes: another operator decides)")
    status = found.status(now)
    if status != "pending":
        raise ApprovalError(f"approval #{found.id} is {status}: only a pending request "
                            f"can be {verb}d")


def _existing(store: HistoryStore, reader: Reader, approval: int, *,
              detail: bool = True) -> Approval:
    """The approval (inside a write: read under the chain's lock), else ApprovalError."""
    found = get(reader, approval, detail=detail)
    if found is None:
        raise ApprovalError(f"approval #{approval}: no such request in history {store.where}"
                            " (`walletctl approvals` lists them)")
    return found


def spender(store: HistoryStore, approval: int, request: Request, *, now: str,
            batch_id: str | None = None) -> WriteHook:
    """A hook for :meth:`HistoryStore.append_many`: spends ``approval`` in the transaction
    that records the intent (``ids[0]``) or starts the batch (a re-run finds it spent by
    itself: allowed)."""
    me = acting_as(store)

    def spend(tx: Transaction, ids: list[int]) -> None:
        found = _existing(store, tx, approval, detail=False)
        entry = ids[0] if ids else None
        refuse_to_spend(found, request, me=me, now=now, batch_id=batch_id, entry=entry)
        if found.state == "spent":
            return  # by this very movement or batch, recorded again (a re-run, a resume)
        tx.tables.spend_approval(approval, at=now, entry=entry if batch_id is None else None,
                                 batch=batch_id)

    return spend


def _spent_by_itself(found: Approval, request: Request, *, batch_id: str | None,
                     entry: int | None) -> bool:
    """Spent already by this batch, or by this movement (its entry once it is recorded,
    its reference before)."""
    if found.state != "spent":
        return False
    if batch_id is not None:
        return found.spent_batch == batch_id
    if found.spent_entry is None:
        return False
    return found.spent_entry == entry if entry is not None else \
        found.new_ref == request.new_ref


def refuse_to_spend(found: Approval, request: Request, *, me: str, now: str,
                    batch_id: str | None = None, entry: int | None = None) -> None:
    """Raise ApprovalError unless ``me`` may send ``request`` under ``found`` now: it is
    approved and not expired, or already spent by this very movement or batch (a re-run
    after an unknown outcome, a resumed batch)."""
    if _spent_by_itself(found, request, batch_id=batch_id, entry=entry):
        return
    refuse_unless_approved(found, now)
    which = f"approval #{found.id}"
    if found.requester != me:
        raise ApprovalError(f"{which} was filed by {found.requester}: only they send it; "
                            "nothing was sent")
    changed = "; ".join(request.differences(found))
    if changed:
        raise ApprovalError(f"{which} does not match this request ({changed}); nothing "
                            "was sent", hint="run exactly the approved command, or file a "
                                             "new request without --approval")


def refuse_unless_approved(found: Approval, now: str) -> None:
    """Raise ApprovalError unless ``found`` is approved and not expired."""
    status = found.status(now)
    which = f"approval #{found.id}"
    if status == "pending":
        raise ApprovalError(f"{which} is still pending: another operator approves it first "
                            f"(`walletctl approve {found.id}`); nothing was sent")
    if status != "approved":
        when = {"spent": f" (at {found.spent_at})", "expired": f" (at {found.expires_at})",
                "refused": f" by {found.decided_by}"}.get(status, "")
        raise ApprovalError(f"{which} is {status}{when}; nothing was sent",
                            hint="file a new request: run the command without --approval")


def spend_batch(store: HistoryStore, approval: int, request: Request, *, now: str,
                batch_id: str) -> None:
    """Spend a batch approval for ``batch_id`` before its first row is sent (a resumed run
    of the same batch finds it spent by itself; its journal keeps each row once)."""
    hook = spender(store, approval, request, now=now, batch_id=batch_id)
    with store.transaction() as tx:
        hook(tx, [])
