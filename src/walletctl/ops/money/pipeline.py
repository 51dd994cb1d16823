"""The money pipeline: :func:`move` runs every single movement (checkout, capture, refund,
reverse, authorize) through the protocol's steps in their one order (:mod:`.steps`, the order
docs/money.md draws; :class:`Single` is a single movement's part in each); each operation
brings only what is its own (:class:`Movement`, :mod:`.movements`). A batch row runs the same
sequence from ops/batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from walletctl.errors import GatewayError, HeldError, WalletctlError
from walletctl.history.policy import check_policy
from walletctl.history.recorder import Recording, recording
from walletctl.history.rulebook import read as read_rulebook
from walletctl.history.rulebook import under_rulebook
from walletctl.models.ledger import KIND_OF_OP
from walletctl.models.outcome import Intended, Planned
from walletctl.ops.money.approval import gate_single
from walletctl.ops.money.approval import threshold as approval_amount
from walletctl.ops.money.earlier import Judged, taken
from walletctl.ops.money.lock import Held, hold_original, lock_key
from walletctl.ops.money.steps import Finished, run

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore, WriteHook
    from walletctl.models.records import TransactionRecord


@dataclass(frozen=True)
class Ask:
    """What the operator asked for (already parsed by the command)."""

    op: str  # checkout | capture | refund | reverse | authorize
    ref: str  # the reference the movement is locked and looked up on
    amount: str | None = None
    currency: str | None = None
    new_ref: str | None = None
    reason: str | None = None
    confirm_amount: str | None = None
    allow_duplicate: bool = False
    dry_run: bool = False
    approval: int | None = None  # the id of a second operator's approval (--approval)


PlanT = TypeVar("PlanT")
AnswerT = TypeVar("AnswerT")
AnswerT_co = TypeVar("AnswerT_co", covariant=True)


@dataclass(frozen=True)
class Desk(Generic[PlanT]):
    """The command's conversation with the operator (the CLI passes its prompts):
    ``confirm`` sees the operation's plan (it asks y/N, or raises to send nothing);
    ``warn`` shows a warning (an outcome the history could not record)."""

    confirm: Callable[[PlanT], None]
    ask_amount: Callable[[str], str] | None = None
    on_wait: Callable[[str], None] | None = None
    warn: Callable[[str], None] | None = None


class Movement(Protocol[PlanT, AnswerT_co]):
    """What one operation supplies to :func:`move`."""

    def earlier(self, client: GatewayClient, store: HistoryStore | None,
                dry_run: bool) -> tuple[list[TransactionRecord], list[Judged]]:
        """The records the plan needs (looked up once) and the earlier unknown intents on
        the reference, judged against them and recorded."""
        ...

    def repeated(self, judged: list[Judged]) -> Judged | None:
        """The earlier intent this command repeats (applied, absent or in conflict)."""
        ...

    def plan(self, client: GatewayClient, store: HistoryStore | None,
             records: list[TransactionRecord], same: Judged | None, rec: Recording) -> PlanT:
        """Pre-flight and the exact request; raises what the gateway would refuse (what was
        asked is recorded in ``rec`` first, so that a refusal carries it)."""
        ...

    def planned(self, plan: PlanT) -> Planned:
        ...

    def hold_duplicate(self, store: HistoryStore | None, client: GatewayClient, plan: PlanT,
                       records: list[TransactionRecord]) -> None:
        """Raise when an identical movement was made minutes ago (likely a duplicate)."""
        ...

    def send(self, client: GatewayClient, plan: PlanT, rec: Recording) -> AnswerT_co:
        """Send; record the answer in ``rec`` (a 409 is :func:`move`'s to read)."""
        ...


@dataclass(frozen=True)
class Moved(Generic[PlanT, AnswerT]):
    """What happened: ``answer`` to a request sent now, or ``earlier``: this command's
    earlier intent was applied and nothing was sent, or ``found``: the gateway answered 409
    and showed this very movement already there; ``plan`` alone: a dry run. ``exit_code``:
    the command's exit, decided once by the movement from the outcome the history records
    (:func:`.movements.follow_up`, ``ops/walletpay.authorize``), with ``failure`` saying why
    when it is not 0 (the command raises it once the result is shown)."""

    plan: PlanT | None = None
    answer: AnswerT | None = None
    earlier: Judged | None = None
    found: TransactionRecord | None = None
    exit_code: int = 0
    failure: WalletctlError | None = None


def move(client: GatewayClient, store: HistoryStore | None, movement: Movement[PlanT, AnswerT],
         ask: Ask, desk: Desk[PlanT]) -> Moved[PlanT, AnswerT]:
    """Move the money once, or say why not (an exception with its exit code)."""
    result: Moved[PlanT, AnswerT] = run(Single(client, store, movement, ask, desk),
                                        dry_run=ask.dry_run)
    return result


class Single(Generic[PlanT, AnswerT]):
    """A single movement's part in each of the steps (:data:`.steps.STEPS`, in the order
    :func:`.steps.sequence` takes them): the operator's ask, the desk's conversation, one
    request; every failure is an exception, recorded by the history's recording."""

    def __init__(self, client: GatewayClient, store: HistoryStore | None,
                 movement: Movement[PlanT, AnswerT], ask: Ask, desk: Desk[PlanT]) -> None:
        self.client, self.store, self.movement, self.ask, self.desk = \
            client, store, movement, ask, desk
        self.profile = client.profile
        self.held: Held | None = None
        self.rec: Recording
        self.judged: list[Judged] = []
        self.planned: Planned
        self.fresh = False

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The original's lock (none for a dry run) and the history's entry, held to the
        recorded answer; under them the desk's rulebook over the profile's own rules."""
        ask = self.ask
        key = lock_key(self.profile, ask.ref)
        hold: contextlib.AbstractContextManager[Held | None] = (
            contextlib.nullcontext() if ask.dry_run
            else hold_original(self.store, key, what=ask.ref, on_wait=self.desk.on_wait))
        with hold as held, recording(self.store, self.profile, ask.op, ask.ref,
                                     reason=ask.reason, warn=self.desk.warn) as rec:
            self.held, self.rec = held, rec
            book = {} if self.store is None else read_rulebook(self.store)
            self.profile = under_rulebook(book, self.profile)
            self.client = self.client.with_profile(self.profile)  # the caller's keeps its own
            yield

    def look_up(self) -> list[TransactionRecord]:
        """The records the plan needs, and the earlier unknown intents judged against them."""
        records, self.judged = self.movement.earlier(self.client, self.store, self.ask.dry_run)
        return records

    def settle_earlier(self, records: list[TransactionRecord]) -> Judged | None:
        same = self.movement.repeated(self.judged)
        if same is not None and same.verdict == "conflict":  # reported once, then recorded
            raise same.error()
        if same is not None and same.verdict == "applied":
            raise Finished(Moved(earlier=same))
        return same

    def plan(self, records: list[TransactionRecord], same: Judged | None) -> PlanT:
        plan = self.movement.plan(self.client, self.store, records, same, self.rec)
        planned = self.planned = self.movement.planned(plan)
        self.rec.planned(planned.new_ref, planned.amount, planned.currency)
        return plan

    def guard(self, plan: PlanT, records: list[TransactionRecord], same: Judged | None) -> None:
        if same is None and not self.ask.allow_duplicate:  # a dry run shows the hold too
            self.movement.hold_duplicate(self.store, self.client, plan, records)

    def predicted(self, plan: PlanT) -> Moved[PlanT, AnswerT]:
        return Moved(plan=plan)

    def approve(self, plan: PlanT, same: Judged | None) -> WriteHook | None:
        """The desk's rules, then the operator's confirmation; the hook that spends an
        approval with the intent."""
        ask = self.ask
        # an earlier intent re-sent under its reference spends (spent) the same approval
        approval = ask.approval if ask.approval is not None or same is None else \
            same.entry.approval
        spend = desk_rules(self.store, self.profile, self.planned, ask, self.desk, self.rec,
                           approval)
        self.desk.confirm(plan)
        if self.held is not None:  # the lock is still this command's (a lease can lapse)
            self.held.confirm()
        return spend

    def record(self, plan: PlanT, hook: WriteHook | None, same: Judged | None) -> None:
        # a reference this command derived (not an earlier intent's, re-sent): no other
        # entry may hold it, and the gateway's answer must be to this very request
        self.fresh = same is None and self.planned.op in KIND_OF_OP
        self.rec.sending(hook=hook, fresh=self.fresh)

    def send(self, plan: PlanT) -> AnswerT | GatewayError:
        """The answer; a 409 (the reference is already used) is the settle step's to read."""
        try:
            return self.movement.send(self.client, plan, self.rec)
        except GatewayError as exc:
            if exc.status != 409:
                raise
            return exc

    def settle(self, plan: PlanT, answer: AnswerT | GatewayError) -> Moved[PlanT, AnswerT]:
        planned, rec = self.planned, self.rec
        if isinstance(answer, GatewayError):
            # the reference is already used: by another transaction (refused), or by this
            # very movement earlier: one lookup tells
            intended = Intended(planned.reference, planned.op, planned.amount, planned.currency,
                                planned.kind)
            return Moved(plan=plan, found=taken(self.client, intended, planned.original, rec))
        if self.fresh and getattr(answer, "replayed", False) is True:
            rec.answered(getattr(answer, "state", "Approved"), outcome="declined",
                         note=f"the gateway replayed another request's answer under "
                              f"{planned.reference}: not this command's movement")
            raise HeldError(
                f"the gateway answered {planned.reference} with the stored answer of an "
                "earlier identical request (another command derived the same reference "
                "at the same moment): that movement is not this command's; nothing was "
                "moved by it",
                hint=f"see `walletctl lookup {planned.original}`; run the command again "
                     "if another movement is still meant")
        return Moved(plan=plan, answer=answer)


def desk_rules(store: HistoryStore | None, profile: Profile, planned: Planned, ask: Ask,
               desk: Desk[PlanT], rec: Recording, approval: int | None) -> WriteHook | None:
    """The desk's rules for one movement, before its confirmation: ``require_reason``,
    ``limits`` (a reason and the amount typed) and, above the approval amount, four eyes
    (filed, exit 12; or the hook that spends it with the intent), which replaces the limit."""
    above = approval_amount(profile, planned.op, planned.currency)
    four_eyes = approval is not None or (above is not None and planned.amount > above)
    settings = profile.history
    check_policy(
        profile_name=profile.name, operation=planned.op, amount=planned.amount,
        currency=planned.currency, require_reason=settings.require_reason,
        limits={} if four_eyes else settings.limits, reason=ask.reason,
        confirm_amount=ask.confirm_amount, ask=desk.ask_amount,
    )
    return gate_single(store, profile, planned, ask.reason, approval, rec)
