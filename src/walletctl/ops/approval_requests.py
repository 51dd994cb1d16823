"""``walletctl approvals`` / ``approve`` / ``approvals refuse``: the second operator's side.

The requests live where the profile's money commands record (its history: a local file, or
the team's PostgreSQL database); see :mod:`walletctl.history.approvals` for the rules.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.errors import UsageError
from walletctl.history import approvals
from walletctl.history.approvals import STATES, Approval
from walletctl.history.recorder import now_utc, os_user
from walletctl.history.store import Intent

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore


@dataclass(frozen=True)
class Listed:
    found: Iterator[Approval]  # read from the history as they are iterated
    now: str
    where: str  # the history they are in, for messages


def _open(profile: Profile, doing: str) -> HistoryStore:
    from walletctl.history import open_for

    return open_for(profile, purpose=f"walletctl {doing}")


@contextmanager
def list_requests(profile: Profile, *, state: str | None, since: str | None,
                  every_merchant: bool = False) -> Iterator[Listed]:
    """The requests, read from the history while the caller iterates them inside the
    ``with`` (the history stays open until then)."""
    if state is not None and state not in STATES:
        raise UsageError(f"--state: must be one of {', '.join(STATES)}")
    now = now_utc()
    with _open(profile, "approvals") as store:
        merchant = None if every_merchant else (profile.merchant_id, profile.store_id)
        yield Listed(approvals.listing(store, now=now, state=state, since=since,
                                       merchant=merchant), now, store.where)


def show(profile: Profile, approval: int) -> tuple[Approval, str]:
    with _open(profile, f"approvals show {approval}") as store:
        return approvals.checked(store, approval, merchant=(profile.merchant_id,
                                                            profile.store_id)), now_utc()


def decide(profile: Profile, approval: int, *, approve: bool, reason: str | None,
           confirm: Callable[[Approval, str], None]) -> Approval:
    """Approve (or refuse) request ``approval`` as this operator, after ``confirm`` (which
    shows it and asks, or raises). Its own requester, a decided, spent or expired request,
    or another merchant's, is refused before anything is asked."""
    verb = "approve" if approve else "refuse"
    with _open(profile, f"{verb} approval {approval}") as store:
        found = approvals.checked(store, approval, merchant=(profile.merchant_id,
                                                             profile.store_id))
        now = now_utc()
        approvals.refuse_to_decide(found, me=approvals.acting_as(store), now=now,
                                   approve=approve)
        confirm(found, now)
        step = Intent(
            time=now_utc(), os_user=os_user(), host=socket.gethostname(), profile=profile.name,
            base_url=profile.base_url, operation="approval",
            original_ref=found.original_ref, new_ref=found.new_ref,
            batch_id=None, reason=reason, outcome="approved" if approve else "refused",
            exit_code=0, note=f"{verb}d #{approval}: {found.requester}'s {found.what()}"[:300],
            merchant_id=profile.merchant_id, store_id=profile.store_id)
        return approvals.decide(store, approval, approve=approve, reason=reason,
                                now=now_utc(), step=step)
