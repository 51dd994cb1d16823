"""The desk's rulebook: its policy kept in the history store, changed only by the store's
owner, each change an entry of the chain (docs/history.md, "The desk's policy"). A profile
may only tighten it (:func:`under_rulebook`). Each movement is checked against it as its
intent is recorded: by a trigger on PostgreSQL, by :func:`refuse_forbidden` in a file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from walletctl.config.profile import APPROVAL_OPERATIONS, HISTORY_OPERATIONS, HistorySettings
from walletctl.errors import UsageError
from walletctl.history.policy import PolicyRefusal, amount_rule
from walletctl.models.money import check_currency, exponent

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import Entry, HistoryStore, Intent, Transaction

KEY_RULE = (f"approvals.<op>[.<CUR>] (op: {', '.join(APPROVAL_OPERATIONS)}), limits.<op>[.<CUR>]"
            f" (op: {', '.join(HISTORY_OPERATIONS)}), require_reason, duplicate_window or "
            "approval_hours")
_AMOUNT_KEY = re.compile(r"(approvals\.(" + "|".join(APPROVAL_OPERATIONS) + r")|limits\.("
                         + "|".join(HISTORY_OPERATIONS) + r"))(\.[A-Z]{3})?")
_AMOUNT = re.compile(r"[0-9]{1,12}(\.[0-9]{1,4})?")
BOUNDS = {"duplicate_window": (0, 1440), "approval_hours": (1, 720)}  # minutes, hours


def checked_key(key: str) -> None:
    """UsageError naming the rule, unless ``key`` is one of the rulebook's keys."""
    if not (_AMOUNT_KEY.fullmatch(key) or key == "require_reason" or key in BOUNDS):
        raise UsageError(f"policy key {key[:60]!r}: must be {KEY_RULE}")
    if key.count(".") == 2:  # its currency: one a payment can be made in
        try:
            check_currency(key.rsplit(".", 1)[1])
        except ValueError as exc:
            raise UsageError(f"policy key {key!r}: the currency {exc}") from None


def checked_value(key: str, value: str) -> str:
    """``value`` for ``key`` in its one spelling, or UsageError naming the key and rule."""
    text = value.strip()
    if _AMOUNT_KEY.fullmatch(key):
        return _checked_amount(key, value, text)
    if key == "require_reason":
        ops = [op.strip() for op in text.split(",")]
        if text == "true":
            return text
        if not all(op in HISTORY_OPERATIONS for op in ops):
            raise UsageError(f"require_reason: must be true or a comma-separated list of "
                             f"{', '.join(HISTORY_OPERATIONS)}, not {value[:40]!r}")
        return ",".join(dict.fromkeys(ops))
    if key in BOUNDS:
        low, high = BOUNDS[key]
        if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
            raise UsageError(f"{key}: must be a whole number from {low} to {high}, "
                             f"not {value[:40]!r}")
        return str(int(text))
    checked_key(key)
    raise AssertionError(key)  # every known key is handled above


def _checked_amount(key: str, value: str, text: str) -> str:
    if not _AMOUNT.fullmatch(text) or Decimal(text) <= 0:
        raise UsageError(f"{key}: must be an amount above 0 in major units, digits and "
                         f"at most one point (e.g. 100.00), not {value[:40]!r}")
    currency = key.rsplit(".", 1)[1] if key.count(".") == 2 else None
    if currency is not None and "." in text and \
            len(text.split(".")[1].rstrip("0")) > (places := exponent(currency)):
        raise UsageError(f"{key}: {currency} amounts have at most {places} decimal "
                         f"place(s), not {value[:40]!r}")
    return f"{Decimal(text):f}"


@dataclass(frozen=True)
class Rule:
    key: str
    value: str
    set_by: str | None
    set_at: str | None


def read(store: HistoryStore) -> dict[str, Rule]:
    """The rulebook as kept in ``store`` (read once per store; {} when nothing is set)."""
    cached: dict[str, Rule] | None = store.rulebook
    if cached is None:
        cached = {key: Rule(key, value, by, at)
                  for key, value, by, at in store.tables.policy()}
        store.rulebook = cached
    return cached


def change(store: HistoryStore, key: str, value: str | None, *, step: Intent) -> tuple[
        str | None, str | None]:
    """Set (``value``) or unset (None) ``key``, with its entry in the chain (``step``, its
    note filled in here), in one transaction: (old, new)."""
    checked_key(key)
    new = None if value is None else checked_value(key, value)
    who = store.operator() or step.os_user  # the database stamps its own on PostgreSQL
    with store.transaction(chain=True) as tx:
        old = tx.tables.policy_value(key)
        if old == new:
            return old, new
        tx.tables.set_policy(key, new, old=old, by=who, at=step.time)
        note = f"policy {key}: {old or '(unset)'} -> {new or '(unset)'}"
        tx.append("begin", None, vars(replace(step, original_ref=key, note=note[:300])))
    store.rulebook = None
    return old, new


# ---- a profile under the rulebook -----------------------------------------------------------
def under_rulebook(book: dict[str, Rule], profile: Profile) -> Profile:
    """``profile`` with the desk's rulebook (:func:`read`) in its ``[history]`` rules: the
    stricter of the two for each rule. A profile that sets a looser value is refused."""
    if not book:
        return profile
    own = profile.history
    defaults = HistorySettings()
    reasons = set(own.require_reason)
    if "require_reason" in book:
        value = book["require_reason"].value
        reasons |= set(HISTORY_OPERATIONS if value == "true" else value.split(","))
    window, hours = own.duplicate_window, own.approval_hours
    if "duplicate_window" in book:
        rule = book["duplicate_window"]  # a longer window is the stricter one
        if window == defaults.duplicate_window:
            window = int(rule.value)
        elif window < int(rule.value):
            _loosens(profile, f"duplicate_window = {window}", "duplicate_window", rule)
    if "approval_hours" in book:
        rule = book["approval_hours"]
        if hours != defaults.approval_hours and hours > int(rule.value):
            _loosens(profile, f"approval_hours = {hours}", "approval_hours", rule)
        hours = min(hours, int(rule.value))
    settings = replace(own, approvals=_lowest(book, "approvals", own.approvals, profile),
                       limits=_lowest(book, "limits", own.limits, profile),
                       require_reason=tuple(op for op in HISTORY_OPERATIONS if op in reasons),
                       duplicate_window=window, approval_hours=hours)
    return replace(profile, history=settings)


def _lowest(book: dict[str, Rule], kind: str, mine: dict[str, str],
            profile: Profile) -> dict[str, str]:
    """The profile's amounts of ``kind`` (approvals or limits) with the rulebook's: the lower
    of the two for each ``op[.CUR]``."""
    merged = dict(mine)
    for key, rule in book.items():
        if key.partition(".")[0] != kind:
            continue
        scoped = key.partition(".")[2]
        op = scoped.split(".")[0]
        if op in mine and Decimal(mine[op]) > Decimal(rule.value):
            _loosens(profile, f"{kind}.{op} = {mine[op]}", key, rule)
        if scoped not in merged or Decimal(merged[scoped]) > Decimal(rule.value):
            merged[scoped] = rule.value
    # a currency's own rule: no looser than the profile's for all currencies
    for scoped in [k for k in merged if "." in k and k.split(".")[0] in mine]:
        op = scoped.split(".")[0]
        if Decimal(mine[op]) < Decimal(merged[scoped]):
            merged[scoped] = mine[op]
    return merged


def _loosens(profile: Profile, mine: str, key: str, rule: Rule) -> None:
    by = f", set by {rule.set_by}" if rule.set_by else ""
    raise PolicyRefusal(
        f"profile {profile.name}: [history] {mine} would loosen the desk's policy "
        f"({key} = {rule.value}{by}); a profile may only tighten it; nothing was sent",
        hint=f"remove it from the profile, or set it to {rule.value} or stricter "
             "(`walletctl history policy show` lists the desk's rules)")


# ---- the store's own check (a local file: the database does it on PostgreSQL) ----------------
def refuse_forbidden(store: HistoryStore, tx: Transaction,
                     begun: list[tuple[Intent, int]]) -> None:
    """Refuse (PolicyRefusal, the whole write rolled back) a movement of ``begun`` (intents
    about to be sent, with their entries) that the rulebook kept in ``store`` forbids."""
    moving = [(i, e) for i, e in begun
              if i.outcome is None and i.operation in HISTORY_OPERATIONS]
    if not moving:
        return
    book = {key: value for key, value, _by, _at in tx.tables.policy()}
    if not book:
        return
    from walletctl.history.approvals import get

    used: dict[tuple[Any, ...], int] = {}
    for intent, entry in moving:
        approval = None if intent.approval is None else get(tx, intent.approval, detail=False)
        covered = 0
        bound = (intent.approval, intent.original_ref, intent.amount, intent.currency)
        if approval is not None and approval.kind == "batch":
            if bound not in used:
                used[bound] = tx.tables.batch_rows_begun(approval.id, *bound[1:])
            used[bound] += 1
            covered = tx.tables.batch_rows_bound(approval.id, *bound[1:])
        problem = movement_problem(book, intent, entry, approval, used.get(bound, 0), covered)
        if problem is not None:
            raise PolicyRefusal(f"history {store.where}: {problem} (the desk's policy, kept in "
                                "the history); nothing was sent",
                                hint="`walletctl history policy show` lists the rules")


def movement_problem(book: dict[str, str], intent: Intent, entry: int,
                     approval: Any | None, rows_used: int, rows_covered: int) -> str | None:
    """Why ``intent`` (a movement about to be sent, numbered ``entry``) breaks the rulebook
    ``book`` (key -> value), or None. ``approval``: the approval it names (its row), with,
    for a batch, how many rows of this reference and amount it covers and has used."""
    op = intent.operation
    try:
        amount = Decimal(intent.amount or "")
    except InvalidOperation:
        return f"{op}: a movement's amount is required"
    what = f"{op} of {intent.amount} {intent.currency} on {intent.original_ref}"
    if not (intent.reason or "").strip():
        required = book.get("require_reason", "")
        if required == "true" or op in required.split(","):
            return f"{what} needs a reason (desk policy require_reason)"
        limit = amount_rule(_amounts(book, "limits."), op, intent.currency)
        if limit is not None and amount > limit:
            return f"{what} is above the desk's limit of {limit:f} and needs a reason"
    above = amount_rule(_amounts(book, "approvals."), op, intent.currency)
    if above is None or amount <= above:
        return None
    why = _unapproved(intent, entry, amount, approval, rows_used > rows_covered)
    return None if why is None else f"{what} is above the desk's approval amount of {above:f}{why}"


def _amounts(book: dict[str, str], prefix: str) -> dict[str, str]:
    return {k.removeprefix(prefix): v for k, v in book.items() if k.startswith(prefix)}


def _unapproved(intent: Intent, entry: int, amount: Decimal, approval: Any | None,
                overused: bool) -> str | None:
    """Why ``approval`` does not let ``intent`` (numbered ``entry``) through, or None."""
    if approval is None:
        return " and names no approval"
    this = f": approval #{approval.id}"
    if approval.state != "spent" or (approval.merchant_id, approval.store_id,
                                     approval.operation) != (intent.merchant_id,
                                                             intent.store_id, intent.operation):
        return f"{this} was not spent for it"
    if approval.kind == "single":
        same = approval.spent_entry == entry and (
            approval.original_ref, approval.new_ref, approval.currency, approval.reason) == (
            intent.original_ref, intent.new_ref, intent.currency, intent.reason) \
            and Decimal(approval.amount or "0") == amount
        return None if same else f"{this} approved another movement"
    if approval.spent_batch != intent.batch_id:
        return f"{this} was spent by another batch"
    if approval.expires_at <= intent.time:
        return f"{this} expired at {approval.expires_at}"
    return f"{this} does not cover this row" if overused else None


# ---- after the fact: what recon and `order` flag -----------------------------------------------
MOVED_MONEY = ("approved", "created")


def unapproved_check(store: HistoryStore) -> Callable[[Entry], str | None]:
    """Why an entry that moved money was above the desk's approval amount in force when it
    was begun and spent no approval for itself (None: it was not): a movement that got past
    the rulebook somehow is still named. The amount in force is read from the chain's policy
    entries (every change of the rulebook is one), not from the rulebook today."""
    changes: dict[str, list[tuple[int, str | None]]] = {}  # key -> its changes, in order
    readable = store.may("approvals")

    def in_force(key: str, entry: int) -> str | None:
        if key not in changes:  # one indexed look-up per key (events_ref)
            changes[key] = [
                (at, None if new in ("", "(unset)") else new)
                for at, note in store.tables.policy_changes(key)
                if (new := str(note or "").rpartition(" -> ")[2]) is not None]
        value = None
        for at, then in changes[key]:
            if at > entry:
                break
            value = then
        return value

    def why(e: Entry) -> str | None:
        if e.operation not in APPROVAL_OPERATIONS or e.outcome not in MOVED_MONEY or not e.id:
            return None
        try:
            amount = Decimal(e.amount or "")
        except InvalidOperation:
            return None
        rule = in_force(f"approvals.{e.operation}.{e.currency}", e.id) or in_force(
            f"approvals.{e.operation}", e.id)
        if rule is None or amount <= Decimal(rule):
            return None
        above = f"{e.operation} of {e.amount} {e.currency} is above the desk's approval amount " \
                f"of {rule} when it was begun"
        if e.approval is None:
            return f"{above} and spent no approval"
        if readable and not store.tables.spent_for(e.approval, operation=e.operation,
                                                   entry=e.id, batch_id=e.batch_id):
            return f"{above}; approval #{e.approval} was not spent for it"
        return None

    return why
