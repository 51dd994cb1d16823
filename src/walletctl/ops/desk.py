"""The desk's controls kept in the history: the owner's side (``history setup``: the schema, and
on PostgreSQL each ``--grant`` role's rights; ``history policy``: the rulebook,
:mod:`walletctl.history.rulebook`) and the second operator's (``approvals``, ``approve``,
``approvals refuse``: :mod:`walletctl.history.approvals`).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from walletctl.errors import RefusedError, UsageError
from walletctl.history import approvals
from walletctl.history.approvals import STATES
from walletctl.history.approvals import Approval as Approval  # the commands' type
from walletctl.history.recorder import intent_for, os_user
from walletctl.history.rulebook import Rule
from walletctl.history.store import Intent
from walletctl.models.entries import now_utc

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore

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
    kind: str = "operator"  # what the granted roles may do


def set_up(profile: Profile | None, grants: Sequence[str], kind: str = "operator") -> SetUp:
    from walletctl import history

    kinds = history.role_kinds()
    if kind not in kinds:
        raise UsageError(f"--role: must be one of {', '.join(kinds)}, not {kind[:40]!r}")
    for role in grants:
        if not ROLE.fullmatch(role):
            raise UsageError(f"--grant: {role[:40]!r} is not a role name (letters, digits, "
                             "_ $ . -, starting with a letter or _; at most 63)")
    where, done = history.set_up(profile, grants, kind)
    return SetUp(history=where.where, backend=where.backend, before=done.before,
                 after=done.after, applied=done.applied, granted=done.granted,
                 owner=done.owner, kind=kind)


# -- the desk's rulebook ------------------------------------------------------------------------
@dataclass(frozen=True)
class Rulebook:
    history: str  # where it is kept
    rules: tuple[Rule, ...]
    changed: tuple[str, str | None, str | None] | None = None  # (key, old, new) when set


def _store(profile: Profile | None, doing: str) -> HistoryStore:
    from walletctl.history import open_profile_history

    return open_profile_history(profile, purpose=f"walletctl history {doing}", create=True)


def show_policy(profile: Profile | None) -> Rulebook:
    from walletctl.history.rulebook import read

    with _store(profile, "policy show") as store:
        return Rulebook(store.where, tuple(read(store).values()))


def change_policy(profile: Profile | None, key: str, value: str | None) -> Rulebook:
    """Set (``value``) or unset (None) one rule, as the history's owner, with its entry in
    the chain."""
    from walletctl.history.rulebook import change, checked_key, checked_value, read

    checked_key(key)  # usage errors before any connection
    if value is not None:
        checked_value(key, value)
    with _store(profile, f"policy {'set' if value is not None else 'unset'} {key}") as store:
        if not store.may_change_rulebook():
            raise RefusedError(
                f"history {store.where}: only the history's owner changes the desk's policy; "
                "nothing was changed",
                hint="the database owner runs `walletctl history policy set` (operators, "
                     "approvers and auditors read it: `walletctl history policy show`)")
        step = Intent(time=now_utc(), os_user=os_user(), host=socket.gethostname(),
                      profile=profile.name if profile else "", base_url=(
                          profile.base_url if profile else ""),
                      operation="policy", outcome="approved", exit_code=0)
        old, new = change(store, key, value, step=step)
        return Rulebook(store.where, tuple(read(store).values()), (key, old, new))


# -- approval requests --------------------------------------------------------------------------

@dataclass(frozen=True)
class Listed:
    found: Iterator[Approval]  # read from the history as they are iterated
    now: str
    where: str  # the history they are in, for messages


def recording_history(profile: Profile, doing: str) -> HistoryStore:
    """The history a command run with ``profile`` records into (a shared one connecting in
    the background: its first use, the desk's lock on the order, is before anything is
    sent); ``doing``: what other operators see while it holds an order (``refund R-1``)."""
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
    with recording_history(profile, "approvals") as store:
        merchant = None if every_merchant else (profile.merchant_id, profile.store_id)
        yield Listed(approvals.listing(store, now=now, state=state, since=since,
                                       merchant=merchant), now, store.where)


@contextmanager
def watch_requests(profile: Profile, *, every_merchant: bool = False) -> Iterator[Listed]:
    """The requests filed from now on, each as it is filed (``approvals --watch``): found
    never ends; the caller stops it (Ctrl-C)."""
    with recording_history(profile, "approvals --watch") as store:
        merchant = None if every_merchant else (profile.merchant_id, profile.store_id)
        after = approvals.newest_id(store)
        yield Listed(approvals.watch(store, after=after, merchant=merchant), now_utc(),
                     store.where)


def show(profile: Profile, approval: int) -> tuple[Approval, str]:
    with recording_history(profile, f"approvals show {approval}") as store:
        return approvals.checked(store, approval, merchant=(profile.merchant_id,
                                                            profile.store_id)), now_utc()


def decide(profile: Profile, approval: int, *, approve: bool, reason: str | None,
           confirm: Callable[[Approval, str], None]) -> Approval:
    """Approve (or refuse) request ``approval`` as this operator, after ``confirm`` (which
    shows it and asks, or raises). Its own requester, a decided, spent or expired request,
    or another merchant's, is refused before anything is asked."""
    verb = "approve" if approve else "refuse"
    with recording_history(profile, f"{verb} approval {approval}") as store:
        found = approvals.checked(store, approval, merchant=(profile.merchant_id,
                                                             profile.store_id))
        now = now_utc()
        approvals.refuse_to_decide(found, me=approvals.acting_as(store), now=now,
                                   approve=approve)
        confirm(found, now)
        step = intent_for(
            profile, "approval", original_ref=found.original_ref, new_ref=found.new_ref,
            reason=reason, outcome="approved" if approve else "refused", exit_code=0,
            note=f"{verb}d #{approval}: {found.requester}'s {found.what()}"[:300])
        return approvals.decide(store, approval, approve=approve, reason=reason,
                                now=now_utc(), step=step)
