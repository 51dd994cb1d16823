"""Four eyes in the money protocol (docs/history.md, "Four eyes"): above ``[history.approvals]``
a movement files a request bound to it (exit 12) instead of being sent; ``--approval ID``
spends an approval given by someone else with the intent. A batch files one request for its
file. The storage and its rules: :mod:`walletctl.history.approvals`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol, TypeVar

from walletctl.constants import ExitCode
from walletctl.errors import AwaitingApprovalError
from walletctl.history import approvals
from walletctl.history.approvals import Approval, Request
from walletctl.history.policy import amount_rule
from walletctl.history.recorder import intent_for, major_text
from walletctl.history.store import WriteHook
from walletctl.models.entries import now_utc, utc_text
from walletctl.models.plain import checked_plain

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.recorder import Recording
    from walletctl.history.store import HistoryStore
    from walletctl.models.outcome import Planned


def threshold(profile: Profile, op: str, currency: str | None = None) -> Decimal | None:
    """The amount above which ``op`` in ``currency`` needs an approval on this profile
    (None: never; ``currency`` None: the lowest of any currency's)."""
    return amount_rule(profile.history.approvals, op, currency)


def _file(store: HistoryStore, request: Request, profile: Profile, now: str) -> Approval:
    """File ``request`` for a second operator: it expires after the profile's hours."""
    expires = datetime.now(UTC) + timedelta(hours=profile.history.approval_hours)
    return approvals.file_request(store, request, now=now, expires_at=utc_text(expires),
                                  host=socket.gethostname())


def _merchant(profile: Profile) -> tuple[str, str]:
    return profile.merchant_id, profile.store_id


def references(store: HistoryStore | None, profile: Profile, op: str, ref: str,
               approval: int | None) -> tuple[str | None, frozenset[str]]:
    """Before a movement's reference is derived: the approved request's reference (sent
    with ``--approval`` and no ``--new-ref``: the same command, the same request), and the
    references open requests hold (skipped when deriving a new one)."""
    if store is None:
        return None, frozenset()
    if approval is not None:
        found = approvals.get(store, approval)
        if found is not None:  # spent, refused, expired or pending: said before anything
            approvals.refuse_unless_approved(found, now_utc())
        same = found is not None and found.kind == "single" and found.original_ref == ref \
            and found.operation == op and _merchant(profile) == (found.merchant_id,
                                                                 found.store_id)
        return (found.new_ref if same and found is not None else None), frozenset()
    if not profile.history.approvals:
        return None, frozenset()
    return None, approvals.reserved_refs(store, merchant=_merchant(profile), original_ref=ref,
                                         now=now_utc())


def _awaiting(found: Approval, limit: Decimal, profile: Profile) -> AwaitingApprovalError:
    return AwaitingApprovalError(
        f"{found.what()} is above profile {profile.name}'s approval amount of {limit:f}: "
        f"filed as approval #{found.id} for a second operator; nothing was sent",
        approval=found,
        hint=f"another operator runs `walletctl approve {found.id}`; then run this same "
             f"command again with --approval {found.id} (before {found.expires_at})")


def gate_single(store: HistoryStore | None, profile: Profile, planned: Planned,
                reason: str | None, approval: int | None, rec: Recording) -> WriteHook | None:
    """Before the confirmation: ``None`` when no approval is needed or given; the hook that
    spends ``approval`` with the intent when one is given (checked now, so that a wrong id
    is refused before anyone is asked); else file a request and raise AwaitingApprovalError
    (exit 12, recorded in the history with the approval's id)."""
    limit = threshold(profile, planned.op, planned.currency)
    needed = limit is not None and planned.amount > limit
    if store is None or (approval is None and not needed):
        return None
    request = Request(kind="single", profile=profile.name, base_url=profile.base_url,
                      merchant_id=profile.merchant_id, store_id=profile.store_id,
                      operation=planned.op, original_ref=planned.original,
                      new_ref=planned.reference,
                      amount=major_text(planned.amount, planned.currency),
                      currency=planned.currency, reason=reason)
    now = now_utc()
    if approval is None:
        assert limit is not None
        found = _file(store, request, profile, now)
        rec.intent = replace(rec.intent, approval=found.id)
        raise _awaiting(found, limit, profile)
    found = approvals.checked(store, approval, merchant=_merchant(profile))
    approvals.refuse_to_spend(found, request, me=approvals.acting_as(store), now=now)
    rec.intent = replace(rec.intent, approval=approval)
    return approvals.spender(store, approval, request, now=now)


# ---- batches --------------------------------------------------------------------------------
class BoundRow(Protocol):
    """What an approval binds of a batch row (a journal row is one; ops.batch sits above)."""

    @property
    def line(self) -> int: ...
    @property
    def ref(self) -> str: ...
    @property
    def amount(self) -> Decimal: ...
    @property
    def currency(self) -> str: ...


RowT = TypeVar("RowT", bound=BoundRow)


def batch_request(profile: Profile, op: str, lines: Iterable[RowT], *, file: str, sha256: str,
                  rows: int, totals: str, reason: str | None,
                  amount_of: Callable[[RowT], Decimal | None]) -> Request:
    """One request for a whole file (``lines``: its rows, in file order); ``amount_of``
    gives the approval amount that applies to a row (the lowest of its profiles'). Every row
    above it is bound (line, reference, amount, currency): a run under the approval sends no
    other row above the amount."""
    checked_plain("batch file name", file)
    bound = tuple((row.line, row.ref, f"{row.amount:f}", row.currency) for row in lines
                  if (limit := amount_of(row)) is not None and row.amount > limit)
    return Request(kind="batch", profile=profile.name, base_url=profile.base_url,
                   merchant_id=profile.merchant_id, store_id=profile.store_id, operation=op,
                   reason=reason, batch_file=file, batch_sha256=sha256, batch_rows=rows,
                   batch_totals=totals, bound_rows=bound)


def gate_batch(store: HistoryStore, profile: Profile, request: Request,
               approval: int | None, *, batch_id: str, limit: Decimal | None,
               spend: bool = True) -> int | None:
    """A batch's approval before its first row: the id it runs under (checked; spent when
    ``spend``), None when none is needed; else one request filed and recorded for the file,
    and AwaitingApprovalError (``limit``: the lowest approval amount, for its message)."""
    if approval is None and (limit is None or not request.bound_rows):
        return None
    now = now_utc()
    if approval is None:
        assert limit is not None
        found = _file(store, request, profile, now)
        store.begin(intent_for(
            profile, request.operation, batch_id=batch_id, outcome="refused",
            exit_code=int(ExitCode.AWAITING_APPROVAL), approval=found.id,
            note=f"awaiting approval #{found.id}: {found.what()}"[:300]))
        raise _awaiting(found, limit, profile)
    found = approvals.checked(store, approval, merchant=_merchant(profile))
    if not spend:  # said before any question is asked; spent after the last one
        approvals.refuse_to_spend(found, request, me=approvals.acting_as(store), now=now,
                                  batch_id=batch_id)
        return approval
    approvals.spend_batch(store, approval, request, now=now, batch_id=batch_id)
    return approval
