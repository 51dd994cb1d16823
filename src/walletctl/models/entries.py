"""The history's records: an intent (a begin event), a completion, an entry as listed, the
filters of a listing, a broken link of the chain, and the one spelling of a recorded time.
Plain data: no storage here (:mod:`walletctl.history` keeps them)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Literal

Outcome = Literal["approved", "created", "declined", "refused", "unknown", "error"]
# created: a checkout the gateway accepted, waiting for the customer (not money moved yet)
OUTCOMES: tuple[str, ...] = ("approved", "created", "declined", "refused", "unknown", "error")
# outcomes under which money may have moved (a likely duplicate is checked against them)
MAY_HAVE_MOVED: tuple[str, ...] = ("approved", "unknown")


def utc_text(when: datetime) -> str:
    """The history's one spelling of a time: UTC, milliseconds, ``Z`` (they sort as text)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def now_utc() -> str:
    return utc_text(datetime.now(UTC))


@dataclass(frozen=True)
class Intent:
    """What is about to be sent (or was refused before sending)."""

    time: str
    os_user: str
    host: str
    profile: str
    base_url: str
    operation: str
    original_ref: str | None = None
    new_ref: str | None = None
    amount: str | None = None  # major units, as text (Decimal formatted with "f")
    currency: str | None = None
    batch_id: str | None = None
    batch_row: int | None = None
    reason: str | None = None
    outcome: str | None = None  # set only for entries complete at birth (pre-flight refusal)
    http_status: int | None = None
    exit_code: int | None = None
    note: str | None = None
    merchant_id: str | None = None  # the intent's identity at the gateway, with store_id,
    store_id: str | None = None  # operation and reference: never the profile's name or URL
    approval: int | None = None  # the approval this movement spends (or a step acts on)


@dataclass(frozen=True)
class Completion:
    time: str
    outcome: str
    http_status: int | None = None
    exit_code: int | None = None
    new_ref: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Entry:
    """One entry as listed: its begin event merged with its latest completion."""

    id: int
    time: str
    os_user: str
    host: str
    profile: str
    base_url: str
    operation: str
    original_ref: str | None
    new_ref: str | None
    amount: str | None
    currency: str | None
    outcome: str
    http_status: int | None
    exit_code: int | None
    batch_id: str | None
    batch_row: int | None
    reason: str | None
    note: str | None
    completed: str | None  # time of the latest completion
    merchant_id: str | None = None
    store_id: str | None = None
    # The database role that recorded it (PostgreSQL's session_user; None in a local file)
    operator: str | None = None
    # ... and the one that recorded its latest outcome (a reconcile may be someone else's)
    completed_by: str | None = None
    approval: int | None = None  # the approval it spent (four eyes), or acted on

    @property
    def reference(self) -> str:
        """The reference this entry's request was sent under."""
        return self.new_ref or self.original_ref or ""

    @property
    def who(self) -> str:
        """Who made it: the authenticated database role, else the OS account and host
        (what a local file can tell, and no more than the writer claims)."""
        return self.operator or f"{self.os_user}@{self.host}"

    def to_dict(self) -> dict[str, Any]:
        # every field holds a plain value: a shallow copy (asdict's deep one cost a listing
        # of a million entries a minute)
        found = {name: getattr(self, name) for name in ENTRY_FIELDS}
        found["operator"] = self.who
        return found


ENTRY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Entry))


@dataclass(frozen=True)
class Filters:
    since: str | None = None  # ISO UTC, inclusive
    until: str | None = None  # ISO UTC, exclusive
    ref: str | None = None  # original or new reference
    operation: str | None = None
    profile: str | None = None
    os_user: str | None = None
    outcome: str | None = None
    limit: int | None = None
    original_ref: str | None = None  # exact original reference (indexed)


@dataclass(frozen=True)
class Broken:
    seq: int  # the event's position in the chain
    problem: str  # names the entry: "entry #12 was changed after it was written"
