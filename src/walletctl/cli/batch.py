"""``capture|refund|reverse --batch``: the batch (:func:`walletctl.ops.batch.job.batch`)
given the operator's prompts, its result shown by :mod:`walletctl.render.batch`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer

from walletctl.cli.common import confirm_profiles, refuse_unconfirmed, terminal_prompt
from walletctl.cli.state import ENV, get_state
from walletctl.errors import AwaitingApprovalError, UsageError
from walletctl.ops.batch.job import BatchAsk, BatchDesk, batch, profile_loader
from walletctl.ops.batch.journal import BatchValidationError
from walletctl.render.console import print_note

if TYPE_CHECKING:
    from walletctl.cli.state import State
    from walletctl.config.profile import Profile


def run_batch(ctx: typer.Context, ask: BatchAsk) -> int:
    """Run the batch; returns an :class:`~walletctl.constants.ExitCode` value."""
    from walletctl.render.approvals import render_filed
    from walletctl.render.batch import render_batch, render_invalid_rows

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
    from walletctl.render.batch import BatchWatch

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
                     note=print_note, watch=BatchWatch, ask_amount=terminal_prompt())


def _confirm_send(op: str, rows: int, money: str) -> bool:
    """A refund's or reversal's y/N on a terminal; without one, --yes is required."""
    if not ENV.is_interactive():
        raise UsageError(f"{op} batch of {rows} row(s) ({money}) needs confirmation",
                         hint="pass --yes to confirm without a terminal")
    return typer.confirm(f"{op.capitalize()} {rows} row(s), {money}?", default=False, err=True)
