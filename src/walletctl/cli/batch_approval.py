"""Four eyes for ``--batch``: one approval request binds the whole file (its sha256).

A batch with rows above the profile's approval amount files one request (exit 12) and sends
nothing; run again with ``--approval ID`` once another operator approved it: the file must
be byte for byte the approved one, and the approval is spent for this batch id before its
first row is sent (a resumed run of the same batch finds it spent by itself).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.errors import AwaitingApprovalError, UsageError
from walletctl.render.batch import money_summary

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.journal import Journal
    from walletctl.ops.batch.plan import Plan


def applies(profile: Profile, op: str, approval: int | None, dry_run: bool) -> bool:
    return not dry_run and (approval is not None or op in profile.history.approvals)


def file_hash(path: Path, digest: str | None) -> str:
    """sha256 of the batch file (stdin: of the spooled copy, already known)."""
    if digest is not None:
        return digest
    found = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 16):
                found.update(chunk)
    except OSError as exc:
        raise UsageError(f"--batch {path}: cannot read ({exc.strerror})") from None
    return found.hexdigest()


def four_eyes(state: Any, profile: Profile, op: str, jr: Journal, plan: Plan, *,
               display: str, sha256: str, path: Path, approval: int | None,
               batch_id: str, spend: bool = True) -> int | None:
    """File the batch for approval (exit 12), or check ``approval`` for it and (``spend``,
    once every confirmation is given) spend it; None: none needed. Refused if the file
    changed while it was planned."""
    from walletctl.history import open_for
    from walletctl.ops.money.approval import batch_request, gate_batch

    if display != "<stdin>" and file_hash(path, None) != sha256:
        raise UsageError(f"--batch {display}: the file changed while it was read; run again")
    request = batch_request(profile, op, jr, file=display, sha256=sha256, rows=plan.to_send,
                            totals=money_summary(plan))
    store = open_for(profile, purpose=f"walletctl {op} --batch {batch_id}")
    try:
        return gate_batch(store, profile, request, approval, batch_id=batch_id, spend=spend)
    except AwaitingApprovalError as exc:
        from walletctl.render.approvals import render_filed

        render_filed(state.output_format, exc.approval)
        raise
    finally:
        store.close()
