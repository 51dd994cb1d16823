"""The run of a ``capture|refund|reverse --batch`` (the CLI side): the async runner with its
progress bar, per-row notes, signal handling and history recorder, and the rows' profiles.

Called by :mod:`walletctl.cli.batch`, which plans, confirms and reports; the rows themselves
are sent by :mod:`walletctl.ops.batch.runner`.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from walletctl.render.batch import NAMED_ON_STDERR, progress_bar

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.batch.audit import BatchAudit
    from walletctl.ops.batch.journal import Journal
    from walletctl.ops.batch.plan import Plan
    from walletctl.ops.batch.results import ResultsWriter
    from walletctl.ops.batch.runner import Gateway, RowResult, RunOptions, RunReport


def profile_loader(state: Any, profile: Profile) -> Callable[[str | None], Profile]:
    """A row's profile by name (its ``profile`` column; none: the command's), loaded once."""
    loaded = {profile.name: profile}

    def profile_for(name: str | None) -> Profile:
        key = name or profile.name
        if key not in loaded:
            loaded[key] = load_row_profile(state, key)
        return loaded[key]

    return profile_for


def load_row_profile(state: Any, name: str) -> Profile:
    """The profile ``name`` from the profiles file, with the command line's --timeout."""
    from walletctl.config.profiles_file import load_profile

    prof = load_profile(name, state.config_path)
    if state.timeout is not None:
        from dataclasses import replace

        prof = replace(prof, timeout=state.timeout)
    return prof


def _audit(state: Any, profile: Profile, options: RunOptions,
           batch_id: str, approval: int | None = None) -> BatchAudit | None:
    """The history recorder of a real run (None for a dry run or with the history off)."""
    from walletctl.history import history_url

    if options.predict or (not profile.history.enabled and history_url(profile) is None):
        return None
    from walletctl.history import open_for
    from walletctl.ops.batch.audit import BatchAudit

    store = open_for(profile, purpose=f"walletctl {options.op} --batch {batch_id}")
    return BatchAudit(store, profile, options.op, batch_id,
                      profile_for=profile_loader(state, profile), approval=approval)


def run_batch(
    state: Any, profile: Profile, jr: Journal, plan: Plan, options: RunOptions,
    writer: ResultsWriter | None, *, approval: int | None = None,
) -> RunReport:
    """Run the plan's rows: progress on stderr (terminal), refused/unknown/pending rows named
    there, SIGINT/SIGTERM/SIGHUP stop it cleanly (twice: at once, the journal resumable)."""
    from walletctl.ops.batch.runner import BatchRunner
    from walletctl.render.console import err, print_note

    concurrency = options.concurrency
    progress, update = progress_bar(plan, err().is_terminal and not options.predict,
                                    label="PRODUCTION batch" if profile.is_production
                                    else "batch")
    named = {"refused": 0, "unknown": 0, "pending": 0}
    audit = _audit(state, profile, options, jr.batch_id, approval)

    def on_result(result: RowResult) -> None:
        if writer is not None:
            writer.write(result.as_dict())
        update(result)
        # A row left pending after its retries says why (a halted run's rows all share
        # the one reason the summary gives).
        if result.status in named and not options.predict and not (
                result.status == "pending"
                and (result.detail or "").startswith(BatchRunner.NOT_DONE)):
            named[result.status] += 1
            if named[result.status] <= NAMED_ON_STDERR:
                print_note(f"line {result.line}: {result.ref}: {result.status}: "
                           f"{result.detail or result.txn_state or ''}")

    async def main() -> RunReport:
        from walletctl.client.aio import AsyncGatewayClient

        clients: dict[str, AsyncGatewayClient] = {}
        profile_for = profile_loader(state, profile)

        def gateway_for(name: str | None) -> Gateway:
            key = name or profile.name
            if key not in clients:
                clients[key] = AsyncGatewayClient(profile_for(key), max_connections=concurrency)
            return clients[key]

        record, on_send = on_result, None
        if audit is not None:
            def record(result: RowResult) -> None:
                audit.on_result(result)
                on_result(result)

            on_send = audit.on_send
        runner = BatchRunner(jr, gateway_for, options, on_result=record, on_send=on_send,
                             history=None if audit is None else audit.store)
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                print_note("stopping: finishing requests in flight (Ctrl-C again to abort "
                           "now; the journal stays resumable)")
                runner.stop()
            elif task is not None:
                task.cancel()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            return await runner.run()
        except asyncio.CancelledError:
            runner.report.interrupted = True
            return runner.report
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
                if signals:
                    # Already stopping on a signal: one more (Ctrl-C pressed again while the
                    # summary is written) must not kill the process before it exits 130.
                    signal.signal(sig, signal.SIG_IGN)
            for client in clients.values():
                await client.aclose()

    try:
        if progress is not None:
            with progress:
                report = asyncio.run(main())
        else:
            report = asyncio.run(main())
    finally:
        jr.commit()
        if audit is not None:
            audit.close()
    if report.interrupted and report.rows < plan.rows:
        _count_from_journal(report, jr)
    return report


def _count_from_journal(report: RunReport, jr: Journal) -> None:
    """An aborted run (Ctrl-C twice) never reported the rows it had not reached, nor the ones
    in flight: the journal has them all ('sent' rows may have been applied: unknown)."""
    counts = jr.counts()
    report.counts.update(confirmed=counts["confirmed"], refused=counts["refused"],
                         unknown=counts["sent"] + counts["unknown"], pending=counts["planned"])
