"""``walletctl capture|refund|reverse``: follow-ups of a checkout, single or ``--batch``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from walletctl.cli.common import (
    ConfirmAmount,
    DryRun,
    Rate,
    Reason,
    Yes,
    confirm,
    confirm_profiles,
    make_client,
    missing,
    print_dry_run,
    production_tag,
    refuse_unconfirmed,
    terminal_prompt,
)
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import ENV, State, get_state
from walletctl.errors import AwaitingApprovalError, UsageError
from walletctl.models.operations import CONFIRMED, NAMES, TAG_OF, Op

if TYPE_CHECKING:
    from collections.abc import Iterable

    from walletctl.config.profile import Profile
    from walletctl.ops.batch.job import BatchAsk, BatchDesk
    from walletctl.ops.redirect import FollowUpPlan

def register(app: typer.Typer) -> None:
    for op in NAMES:
        app.command(op, help=COMMANDS[op][1])(_make(op))


def _make(op: Op):  # type: ignore[no-untyped-def]
    def command(
        ctx: typer.Context,
        ref: Annotated[
            str | None,
            typer.Argument(help="Reference of the original checkout (clientSystemInvoiceId)."),
        ] = None,
        amount: Annotated[
            str | None, typer.Option(help="Amount in major units (default: all that remains).")
        ] = None,
        currency: Annotated[
            str | None, typer.Option(help="Must match the original's currency.")
        ] = None,
        new_ref: str | None = typer.Option(  # per operation
            None, help=f"Reference of the new transaction (default: derived, REF-{TAG_OF[op]}1, "
            f"REF-{TAG_OF[op]}2, ...)."),
        reason: Reason = None,
        confirm_amount: ConfirmAmount = None,
        yes: Yes = False,
        confirm_profile: Annotated[
            list[str] | None,
            typer.Option(
                "--confirm-profile", metavar="NAME",
                help="The profile's name, confirming a batch against a production profile "
                "without a terminal (--yes does not replace it; repeat it for each production "
                "profile a batch's rows name). When given, it must match the profile.",
            ),
        ] = None,
        allow_duplicate: Annotated[
            bool,
            typer.Option(
                "--allow-duplicate",
                help="Send even when an identical movement on this original was made in the "
                "last minutes (the profile's [history] duplicate_window, default 10); without "
                "it such a likely duplicate is held, exit 11.",
            ),
        ] = False,
        dry_run: DryRun = False,
        approval: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Send under this approval id: another operator approved exactly this "
                "request (or batch file) above the profile's approval amount.",
            ),
        ] = None,
        batch: Annotated[Path | None, typer.Option(
            help="CSV or JSONL file of rows (ref, amount, currency[, new_ref]); '-' for stdin.")
        ] = None,
        journal: Annotated[
            Path | None, typer.Option(help="Journal file (default: beside the input).")
        ] = None,
        resume: Annotated[
            bool, typer.Option("--resume", help="Continue an interrupted batch.")
        ] = False,
        concurrency: Annotated[int, typer.Option(min=1, max=256, help="Requests in flight.")] = 8,
        rate: Rate = None,
        results: Annotated[
            Path | None, typer.Option(help="Per-row results (.ndjson/.jsonl or .csv).")
        ] = None,
        skip_invalid: Annotated[
            bool, typer.Option("--skip-invalid", help="Send the valid rows, report the rest.")
        ] = False,
        max_failures: Annotated[
            int, typer.Option(min=1, help="Stop after K consecutive gateway failures.")
        ] = 10,
        batch_id: Annotated[
            str | None,
            typer.Option(help="Batch id for derived references (default: from the input)."),
        ] = None,
        full_preflight: Annotated[bool, typer.Option(
            "--full-preflight",
            help="Look every row's original up before sending (two round trips a row).")
        ] = False,
        offline: Annotated[bool, typer.Option(
            "--offline", help="With --dry-run: validate only, no read-only pre-flight lookups.")
        ] = False,
    ) -> None:
        if batch is not None:
            if ref is not None or amount is not None or new_ref is not None:
                raise UsageError(
                    "--batch takes its references and amounts from the file; "
                    "drop REF/--amount/--new-ref"
                )
            from walletctl.ops.batch.job import BatchAsk

            raise typer.Exit(_batch(ctx, BatchAsk(
                op=op, source=batch, journal=journal, resume=resume, concurrency=concurrency,
                rate=rate, results=results, skip_invalid=skip_invalid,
                max_failures=max_failures, batch_id=batch_id, dry_run=dry_run, yes=yes,
                full_preflight=full_preflight, offline=offline,
                allow_duplicate=allow_duplicate, approval=approval,
                confirm_profile=tuple(confirm_profile or ()), reason=reason,
                confirm_amount=confirm_amount)))
        if ref is None:
            raise missing(op, "REF", "--batch FILE")
        _single(ctx, op, ref, amount=amount, currency=currency, new_ref=new_ref, yes=yes,
                dry_run=dry_run, reason=reason, confirm_amount=confirm_amount,
                allow_duplicate=allow_duplicate, approval=approval,
                confirm_profile=confirm_profile or [])

    command.__doc__ = COMMANDS[op][1]
    return command


def _single(ctx: typer.Context, op: Op, ref: str, *, amount: str | None,
            currency: str | None, new_ref: str | None, yes: bool, dry_run: bool,
            reason: str | None, confirm_amount: str | None, allow_duplicate: bool,
            approval: int | None, confirm_profile: list[str]) -> None:
    from walletctl.models.inputs import check_inputs, clean_reason
    from walletctl.ops.desk import recording_history

    # REF, --new-ref, --amount and --currency by the request model's rules, before the
    # profile, the history or the gateway is touched
    check_inputs(references={"REF": ref, "--new-ref (clientSystemTransactionId)": new_ref},
                 amounts={"--amount": amount},
                 currencies={"--currency": currency})
    st = get_state(ctx)
    checked_reason = clean_reason(reason)
    profile = st.profile()
    # a name given must be this profile's (a single movement asks no name: its y/N says
    # PRODUCTION)
    confirm_profiles([profile], confirm_profile, action=f"{op} {ref}", required=False)
    # a shared history connects while the rest of the command loads (its first use, the
    # desk's lock on the order, is before anything is sent)
    store = None if dry_run else recording_history(profile, f"{op} {ref}")
    from walletctl.models.money import format_major
    from walletctl.ops.money.movements import NOUN, follow_up
    from walletctl.ops.money.pipeline import Ask, Desk
    from walletctl.render.followup import (
        render_applied,
        render_result,
        render_waiting,
        render_warning,
    )

    ask = Ask(op=op, ref=ref, amount=amount, currency=currency, new_ref=new_ref,
              reason=checked_reason, confirm_amount=confirm_amount,
              allow_duplicate=allow_duplicate, dry_run=dry_run, approval=approval)

    def confirm_plan(plan: FollowUpPlan) -> None:
        if op in CONFIRMED:
            req = plan.request
            confirm(f"{production_tag(profile)}{NOUN[op].capitalize()} of "
                    f"{format_major(req.amount, req.currency_code)} "
                    f"on {ref} as {req.client_system_transaction_id}"
                    f"{_where(profile)}\n  now: "
                    f"{plan.balance.summary()}", yes=yes, action=NOUN[op])

    desk: Desk[FollowUpPlan] = Desk(confirm=confirm_plan, ask_amount=terminal_prompt(),
                                    on_wait=render_waiting, warn=render_warning)
    try:
        with make_client(st) as client:
            moved = follow_up(client, store, ask, desk)
            if dry_run and moved.plan is not None:
                print_dry_run(st, [client.prepare_followup(moved.plan.request)])
                return
    except AwaitingApprovalError as exc:  # filed, not sent: its id on stdout, then exit 12
        from walletctl.render.approvals import render_filed

        render_filed(st.output_format, exc.approval)
        raise
    finally:
        if store is not None:  # closed already once it was used; not if a check came first
            store.close()
    earlier = moved.earlier
    applied = moved.found or (earlier.record if earlier is not None else None)
    if applied is not None:
        render_applied(st.output_format, op, ref, earlier.entry.id if earlier else None,
                       applied, tag=production_tag(profile))
    else:
        assert moved.plan is not None
        assert moved.answer is not None
        render_result(st.output_format, op, ref, moved.plan, moved.answer,
                      tag=production_tag(profile))
    if moved.failure is not None:  # the exit the result carries (5 or 8), with its reason
        raise moved.failure
    raise typer.Exit(moved.exit_code)


def _where(profile: Profile) -> str:
    """`` (profile prod, https://gw...)`` on a production profile's confirmation line."""
    return f" (profile {profile.name}, {profile.base_url})" if profile.is_production else ""


def _batch(ctx: typer.Context, ask: BatchAsk) -> int:
    """The batch (:func:`walletctl.ops.batch.job.batch`) given the operator's prompts;
    returns an :class:`~walletctl.constants.ExitCode` value."""
    from walletctl.ops.batch.job import batch
    from walletctl.ops.batch.journal import BatchValidationError
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
    from walletctl.ops.batch.job import BatchDesk, profile_loader
    from walletctl.render.batch import BatchWatch, render_note
    from walletctl.render.followup import render_warning

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
                     note=render_note, watch=BatchWatch, ask_amount=terminal_prompt(),
                     warn=render_warning)


def _confirm_send(op: str, rows: int, money: str) -> bool:
    """A refund's or reversal's y/N on a terminal; without one, --yes is required."""
    if not ENV.is_interactive():
        raise UsageError(f"{op} batch of {rows} row(s) ({money}) needs confirmation "
                         f"({ENV.why_not_asked()})",
                         hint="pass --yes to confirm without a terminal")
    return typer.confirm(f"{op.capitalize()} {rows} row(s), {money}?", default=False, err=True)
