"""``capture|refund|reverse --batch``: the CLI side of batch follow-ups.

Not a command module: ``cli/followup.py`` calls :func:`run_batch_command` with its parsed
options. The batch itself is :func:`walletctl.ops.batch.job.batch`; this module gives it the
operator's prompts (:class:`~walletctl.ops.batch.job.BatchDesk`) and has
:mod:`walletctl.render.batch` show the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from walletctl.errors import AwaitingApprovalError, UsageError
from walletctl.ops.batch.job import BatchAsk, BatchDesk, batch, profile_loader
from walletctl.ops.batch.journal import BatchValidationError

if TYPE_CHECKING:
    from walletctl.cli.state import State
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.input_rows import Op


def run_batch_command(
    ctx: typer.Context,
    *,
    op: Op,
    source: Path,
    journal: Path | None,
    resume: bool,
    concurrency: int,
    rate: float | None,
    results: Path | None,
    skip_invalid: bool,
    max_failures: int,
    batch_id: str | None,
    dry_run: bool,
    yes: bool,
    full_preflight: bool = False,
    offline: bool = False,
    allow_duplicate: bool = False,
    approval: int | None = None,
    confirm_profile: list[str] | None = None,
    reason: str | None = None,
    confirm_amount: str | None = None,
) -> int:
    """Run the batch; returns an :class:`~walletctl.constants.ExitCode` value."""
    from walletctl.cli.state import get_state
    from walletctl.render.approvals import render_filed
    from walletctl.render.batch import render_batch, render_invalid_rows

    ask = BatchAsk(op=op, source=source, journal=journal, resume=resume,
                   concurrency=concurrency, rate=rate, results=results,
                   skip_invalid=skip_invalid, max_failures=max_failures, batch_id=batch_id,
                   dry_run=dry_run, yes=yes, full_preflight=full_preflight, offline=offline,
                   allow_duplicate=allow_duplicate, approval=approval,
                   confirm_profile=tuple(confirm_profile or ()), reason=reason,
                   confirm_amount=confirm_amount)
    state = get_state(ctx)
    try:
        with batch(ask, _desk(state, ask)) as result:
            return render_batch(state.output_format, result)
    except BatchValidationError as exc:
        render_invalid_rows(exc)
        raise
    except AwaitingApprovalError as exc:  # filed, not sent: its id on stdout, then exit 12
        render_filed(state.output_format, exc.approval)
        raise


def _desk(state: State, ask: BatchAsk) -> BatchDesk:
    from walletctl.cli.common import ask_amount, confirm_profiles, refuse_unconfirmed
    from walletctl.render.batch import BatchWatch
    from walletctl.render.console import print_note

    def profile() -> Profile:
        prof = state.profile()
        if not ask.dry_run:  # a production profile in a pipe: refused before any file is read
            refuse_unconfirmed(prof, ask.confirm_profile, action=f"run the {ask.op} batch "
                               f"{ask.source}")
        return prof

    def confirm_names(profiles: Iterable[Profile], action: str, required: bool) -> bool:
        return confirm_profiles(profiles, ask.confirm_profile, action=action,
                                required=required)

    return BatchDesk(profile=profile,
                     load_profile=profile_loader(state.config_path, state.timeout),
                     confirm_profiles=confirm_names, confirm_send=_confirm_send,
                     note=print_note, watch=BatchWatch, ask_amount=ask_amount())


def _confirm_send(op: str, rows: int, money: str) -> bool:
    """A refund's or reversal's y/N on a terminal; without one, --yes is required."""
    from walletctl.cli.state import ENV

    if not ENV.is_interactive():
        raise UsageError(f"{op} batch of {rows} row(s) ({money}) needs confirmation",
                         hint="pass --yes to confirm without a terminal")
    return typer.confirm(f"{op.capitalize()} {rows} row(s), {money}?", default=False, err=True)
