"""Recon's findings on file (``recon --record``, ``recon findings``, ``recon resolve``), kept by
:mod:`walletctl.history.findings`: a resolved one found again is shown resolved, not new.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from walletctl.errors import UsageError
from walletctl.history.findings import New, Recorded, identity
from walletctl.history.store import Intent
from walletctl.models.plain import checked_plain
from walletctl.ops.recon.compare import MISMATCHES

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore
    from walletctl.ops.recon.compare import Finding


def _step(profile: Profile, operation: str) -> Intent:
    """A finding step's chain entry (its references and note are the finding's)."""
    from walletctl.history.recorder import intent_for

    return intent_for(profile, operation, outcome="approved", exit_code=0)


def with_files(store: HistoryStore, profile: Profile, findings: list[Finding], *,
               record: bool) -> list[Finding]:
    """``findings`` with what is on file for each (``record``: the mismatches not on file
    are filed first, each with its entry in the chain)."""
    from walletctl.history import findings as kept

    merchant = (profile.merchant_id, profile.store_id)
    named = [f for f in findings if f.kind in MISMATCHES]
    if record and named:
        kept.record(store, merchant, [New(f.kind, f.original, f.reference, f.entry, f.note)
                                      for f in named], step=_step(profile, "finding"))
    if not named or not store.keeps_findings():  # a database not yet upgraded: none
        return findings
    found = {r.identity: r for r in kept.on_file(store, merchant,
                                                 references={f.reference for f in named})}
    return [replace(f, recorded=found.get(identity(merchant, f.kind, f.reference, f.entry)))
            if f.kind in MISMATCHES else f for f in findings]


@dataclass(frozen=True)
class FindingList:
    history: str
    findings: list[Recorded]
    state: str | None  # open | resolved | None (all)


def _store(profile: Profile, purpose: str) -> HistoryStore:
    from walletctl.history import open_profile_history

    return open_profile_history(profile, purpose=purpose)


def listing(profile: Profile, *, state: str | None) -> FindingList:
    """The profile's merchant's findings on file, oldest first."""
    from walletctl.history import findings as kept

    if state is not None and state not in kept.STATES:
        raise UsageError(f"--state {state[:20]!r}: must be one of {', '.join(kept.STATES)}")
    with _store(profile, "walletctl recon findings") as store:
        found = list(kept.on_file(store, (profile.merchant_id, profile.store_id),
                                  state=state))
        return FindingList(store.where, found, state)


def resolve(profile: Profile, finding: int, note: str) -> Recorded:
    """Close finding ``finding`` with ``note`` (its entry in the chain)."""
    from walletctl.history import findings as kept

    checked_plain("--note", note)
    text = " ".join(note.split())
    if not text:
        raise UsageError("--note: a resolution says what was decided (not empty)")
    if len(text) > kept.NOTE_MAX:
        raise UsageError(f"--note: at most {kept.NOTE_MAX} characters (got {len(text)})")
    if not text.isprintable():
        raise UsageError("--note: printable text only")
    if not 1 <= finding <= 2**62:
        raise UsageError(f"ID {finding}: must be a finding's number (1 or more)")
    with _store(profile, f"walletctl recon resolve {finding}") as store:
        return kept.resolve(store, finding, merchant=(profile.merchant_id, profile.store_id),
                            note=text, step=_step(profile, "resolve"))
