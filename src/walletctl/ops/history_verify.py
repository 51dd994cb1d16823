"""``walletctl history verify`` and ``history anchor``: the chain checked against itself, and
against heads a team keeps outside the history.

A chain only proves itself: deleting its newest events, or rewriting one and recomputing
every hash after it (the owner's maintenance path on PostgreSQL; anyone who can write a
local file), leaves a chain that verifies. An *anchor* is the head as ``history anchor``
prints it, one JSON line kept elsewhere (a file in git, a CI log, a ticket); ``verify
--anchor FILE`` checks that every anchor of the file still names an event of this history
with the hash it had then.

``verify --since-anchor FILE`` walks only what was added after the newest anchor of the
file (its event, then every event after it, from its kept hash), and checks every anchor
of the file as ``--anchor`` does: its cost is the events added since, not the history's
size. What it cannot see is a change at or before the anchored event that leaves that
event's own hash as kept (an edited old payload whose hash was not recomputed): only the
full walk finds that, so a team runs it from time to time as well (docs/history.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.config.dburl import DbUrl
from walletctl.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import Broken, Head

_HASH = re.compile(r"[0-9a-f]{64}")
_HEAD_PREFIX = re.compile(r"[0-9a-fA-F]{12,64}")


@dataclass(frozen=True)
class Anchor:
    """A head kept outside the history: ``history anchor``'s line (``line``: where it was
    read in an anchors file, 0 when it was just made)."""

    event: int  # the newest event's number
    entry: int  # the entry it belongs to
    hash: str  # its hash: it covers every event before it
    time: str  # its recorded time (ISO, UTC)
    history: str  # where (a file's path, or the database's URL without a password)
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "entry": self.entry, "hash": self.hash,
                "time": self.time, "history": self.history}


@dataclass(frozen=True)
class AnchorFailure:
    """An anchor this history no longer matches: ``found`` is the hash its event has now
    (None: no event of that number is left)."""

    anchor: Anchor
    found: str | None


@dataclass(frozen=True)
class Verified:
    """What ``history verify`` found: the chain walked, then the outside evidence."""

    history: str
    backend: str  # sqlite | postgresql
    events: int  # events checked before the first broken one (all when intact)
    broken: Broken | None
    head: Head | None
    anchors: int  # anchor lines checked
    failures: tuple[AnchorFailure, ...]
    expect_head: str | None
    head_gone: bool  # --expect-head names no event of the history
    spent_undecided: tuple[int, ...] | None  # None: this role may not read the approvals
    since: Anchor | None = None  # the anchor the walk started after (None: the first event)

    @property
    def intact(self) -> bool:
        return (self.broken is None and not self.failures and not self.head_gone
                and not self.spent_undecided)


def make_anchor(profile: Profile | None) -> Anchor:
    """The history's head as an anchor (reading only: an auditor's role is enough)."""
    from walletctl.history import history_location, open_location

    found = history_location(profile)
    with open_location(found, create=False, purpose="walletctl history anchor") as store:
        head = store.head()
        where = store.where
    if head is None:
        raise ConfigError(f"history {where}: no events yet, nothing to anchor")
    return Anchor(head.event, head.entry, head.hash, head.time, where)


def verify(profile: Profile | None, *, anchors_file: Path | None,
           expect_head: str | None, since_anchor: Path | None = None) -> Verified:
    """Walk the chain (``since_anchor``: only after the newest anchor of that file); check
    it against the anchors (every line of ``anchors_file`` and ``since_anchor``) and
    ``expect_head``; look for spent approvals whose decision is not in the chain. Usage
    errors (a malformed anchors file) are raised before the history is opened."""
    from walletctl.history import history_location, open_location

    if expect_head is not None and not _HEAD_PREFIX.fullmatch(expect_head):
        raise UsageError("--expect-head: must be 12 to 64 hex digits of a head hash that "
                         "`walletctl history verify` printed")
    anchors = read_anchors(anchors_file) if anchors_file is not None else []
    since = None
    if since_anchor is not None:
        kept = read_anchors(since_anchor, flag="--since-anchor")
        since = max(kept, key=lambda a: a.event)
        anchors += kept
    found = history_location(profile)
    with open_location(found, create=False, purpose="walletctl history verify") as store:
        count, broken = store.verify(None if since is None else (since.event, since.hash))
        head = store.head()
        hashes = store.hashes(a.event for a in anchors)
        gone = expect_head is not None and broken is None and not store.holds(expect_head)
        undecided = store.spent_undecided()
        where = store.where
    failures = tuple(AnchorFailure(a, hashes.get(a.event)) for a in anchors
                     if hashes.get(a.event) != a.hash)
    return Verified(history=where, backend="postgresql" if isinstance(found, DbUrl) else
                    "sqlite", events=count, broken=broken, head=head, anchors=len(anchors),
                    failures=failures, expect_head=expect_head, head_gone=gone,
                    spent_undecided=None if undecided is None else tuple(undecided),
                    since=since)


def read_anchors(path: Path, *, flag: str = "--anchor") -> list[Anchor]:
    """Every anchor line of ``path`` (blank lines and ``#`` comments skipped); a line that
    is not one is a usage error naming the option, the line and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UsageError(f"{flag}: cannot read {path}: {why}") from None
    found: list[Anchor] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            found.append(_anchor(line, f"{flag} {path} line {number}", number))
    if not found:
        raise UsageError(f"{flag}: {path} holds no anchor (lines that `walletctl history "
                         "anchor` printed)")
    return found


def _anchor(line: str, where: str, number: int) -> Anchor:
    try:
        data = json.loads(line)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: not a JSON object (a line `walletctl history anchor` "
                         "printed)")
    fields: dict[str, Any] = {}
    for name, kind in (("event", "a number of 1 or more"), ("entry", "a number of 1 or more"),
                       ("hash", "64 lowercase hex digits"), ("time", "text"),
                       ("history", "text")):
        value = data.get(name)
        good = (isinstance(value, int) and not isinstance(value, bool) and value >= 1
                if name in ("event", "entry") else
                isinstance(value, str) and _HASH.fullmatch(value) is not None
                if name == "hash" else isinstance(value, str))
        if not good:
            what = "missing" if name not in data else f"must be {kind}"
            raise UsageError(f"{where}: field {name!r} {what}")
        fields[name] = value
    return Anchor(**fields, line=number)
