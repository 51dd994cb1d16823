"""``walletctl smoke``: end-to-end checks of a profile + credentials + gateway, for CI.

The command parses options, calls :func:`walletctl.ops.smoke.run_smoke`, shows progress on
stderr (a live Rich table on a terminal, one line per step otherwise) and hands the report to
the writers. Heavy imports stay inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from walletctl.cli.state import get_state

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    from walletctl.ops.smoke import ScenarioResult, SmokeOptions, SmokeReport, StepResult

_STATUS_STYLE = {
    "pending": ("·", "dim", "pending"),
    "running": ("…", "cyan", "running"),
    "passed": ("✓", "green", "passed"),
    "failed": ("✗", "bold red", "FAILED"),
    "error": ("!", "bold red", "ERROR"),
    "skipped": ("-", "yellow", "skipped"),
}


def register(app: typer.Typer) -> None:
    """Add ``smoke`` to ``app``."""
    app.command("smoke")(smoke)


def smoke(
    ctx: typer.Context,
    scenario: Annotated[
        Optional[list[str]],  # noqa: UP045 - Typer needs Optional on 3.11
        typer.Option("--scenario", "-s", help="Run only this scenario (repeatable).",
                     metavar="NAME"),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the scenarios with a one-line description.")
    ] = False,
    profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--profile", "-p", help="Profile to test (same as walletctl --profile)."),
    ] = None,
    embedded: Annotated[
        bool,
        typer.Option("--embedded", help="Start a private sandbox on a free loopback port for "
                     "the duration of the run and test against it."),
    ] = False,
    junit: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--junit", help="Write a JUnit XML report (one testcase per step).",
                     dir_okay=False, metavar="FILE"),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="Print the machine-readable JSON report on stdout.")
    ] = False,
    json_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--json-file", help="Also write the JSON report to FILE.",
                     dir_okay=False, metavar="FILE"),
    ] = None,
    currency: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--currency", help="Currency of the scenarios (default: the profile's, "
                     "else EUR)."),
    ] = None,
    ref_prefix: Annotated[
        str, typer.Option("--ref-prefix", help="Prefix of every reference of the run "
                          "(references are PREFIX-RUNID-...).")
    ] = "smoke",
    amount: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--amount", help="Override a scenario amount in major units, "
                     "NAME=VALUE (repeatable; see docs/ci.md).", metavar="NAME=VALUE"),
    ] = None,
    approve_url_command: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--approve-url-command", help="Approver for the redirect step: run "
                     "CMD <redirectUrl>; exit status 0 = approved.", metavar="CMD"),
    ] = None,
    approve_timeout: Annotated[
        float, typer.Option("--approve-timeout", help="Seconds the approver command may take.",
                            min=1)
    ] = 300.0,
    settle_timeout: Annotated[
        float, typer.Option("--settle-timeout", help="Seconds to wait for an approved "
                            "checkout to leave Pending.", min=0)
    ] = 10.0,
    fail_on_skip: Annotated[
        bool, typer.Option("--fail-on-skip", help="Exit 10 when a step was skipped (e.g. no "
                           "headless approval on this gateway).")
    ] = False,
    confirm_profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--confirm-profile", metavar="NAME", help="The profile's name: a "
                     "production profile's smoke run (it moves money) needs it without a "
                     "terminal (on one, the name is asked for).")
    ] = None,
) -> None:
    """Run end-to-end smoke scenarios against a profile's gateway or an embedded sandbox.

    Exit status: 0 every selected scenario passed, 10 a scenario failed, 9 credentials
    refused, 3 profile problem, 2 a production profile not confirmed (or with --embedded).
    """
    from walletctl.ops.smoke import scenarios as catalogue

    state = get_state(ctx)
    as_json = json_ or state.output == "json"
    if list_:
        _print_list(catalogue.describe(), "json" if json_ else state.output_format)
        return
    from walletctl.ops.smoke import SmokeOptions, validate_options

    options = SmokeOptions(
        scenarios=scenario or [],
        ref_prefix=ref_prefix,
        currency=currency,
        amounts=amount or [],
        approve_command=approve_url_command,
        approve_timeout=approve_timeout,
        settle_timeout=settle_timeout,
        fail_on_skip=fail_on_skip,
    )
    validate_options(options)  # bad options fail before a sandbox starts or a request is sent
    from walletctl.ops.smoke.report import prepare_path, to_json, to_junit, write_text

    for path, flag in ((junit, "--junit"), (json_file, "--json-file")):
        if path is not None:
            prepare_path(path, flag)
    report, masker = _run(state, profile, embedded, options, confirm_profile)

    if junit is not None:
        write_text(junit, to_junit(report, masker))
    text = to_json(report, masker)
    if json_file is not None:
        write_text(json_file, text)
    if as_json:
        typer.echo(text, nl=False)
    else:
        _print_summary(report, masker.text)
    _finish(report, junit, json_file, state)


def _run(
    state: Any, profile_name: str | None, embedded: bool, options: SmokeOptions,
    confirm_profile: str | None = None,
) -> tuple[SmokeReport, Any]:
    from walletctl.cli.production import confirm_production, refuse_production
    from walletctl.cli.state import ENV
    from walletctl.ops.smoke import Masker, run_smoke, smoke_profile

    base = None
    if profile_name is not None:
        state.profile_name = profile_name
        state.typed_profile = profile_name  # carried into hints like the global -p
        state._profile = None
    if embedded:
        from walletctl.errors import ConfigError, UsageError

        if confirm_profile is not None:
            raise UsageError("--confirm-profile: not with --embedded (it tests a private "
                             "sandbox, never a profile's gateway)")
        if state.profile_name is not None:  # -p or $WALLETCTL_PROFILE: never a production one
            try:
                selected = state.profile()
            except ConfigError:  # unusable, and unused: the embedded sandbox needs none
                selected = None
            if selected is not None:
                refuse_production(selected, command="smoke --embedded")
    else:
        base = state.profile()
        confirm_production(base, confirm_profile,
                           action="run smoke scenarios against it (they move money)")
    masker = Masker()
    with smoke_profile(base, embedded=embedded) as prof:
        observer = _observer()
        try:
            report = run_smoke(
                prof,
                options,
                observer=observer,
                transport=None if embedded else ENV.transport,
                trace=(lambda line: _trace(masker.text(line))) if state.verbose else None,
                embedded=embedded,
                masker=masker,
            )
        finally:
            observer.close()
    return report, masker


# --------------------------------------------------------------------------- progress views


def _trace(line: str) -> None:
    """--verbose: the client's masked trace on stderr (above the live table, if any)."""
    import sys

    sys.stderr.write(line + "\n")


def _observer() -> Any:
    import sys

    from walletctl.ops.smoke import SmokeObserver
    from walletctl.render.console import err

    console = err()

    class LineView(SmokeObserver):
        """One line per finished step (CI logs)."""

        def step_finished(self, result: StepResult) -> None:
            _icon, _, word = _STATUS_STYLE[result.status]
            took = f" ({result.duration:.2f} s)" if result.status != "skipped" else ""
            note = result.message or result.detail or ""
            sys.stderr.write(
                f"{word.upper():8} {result.scenario} / {result.name}{took}"
                + (f": {_one_line(note)}" if note else "") + "\n"
            )
            sys.stderr.flush()

        def close(self) -> None:
            return None

    class LiveView(SmokeObserver):
        """A live table on the terminal: scenario, step, status, duration."""

        def __init__(self, con: Console) -> None:
            self.console = con
            self.results: list[ScenarioResult] = []
            self.live: Live | None = None

        def plan(self, results: Any) -> None:
            from rich.live import Live

            self.results = list(results)
            self.live = Live(self._table(), console=self.console, refresh_per_second=10,
                             transient=False)
            self.live.start()

        def step_started(self, result: StepResult) -> None:
            self._refresh()

        def step_finished(self, result: StepResult) -> None:
            self._refresh()

        def _refresh(self) -> None:
            if self.live is not None:
                self.live.update(self._table(), refresh=True)

        def _table(self) -> Table:
            return _results_table(self.results, live=True)

        def close(self) -> None:
            if self.live is not None:
                self.live.stop()
                self.live = None

    if console.is_terminal:
        return LiveView(console)
    return LineView()


def _one_line(text: str, limit: int = 160) -> str:
    line = text.replace("\n", " ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _results_table(results: list[ScenarioResult], *, live: bool) -> Table:
    """Steps of each scenario; in the live view a finished passing scenario (or one not yet
    started) folds into one row, so the table stays the height of a terminal."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="walletctl smoke" if live else None, show_lines=False, expand=False)
    table.add_column("scenario")
    table.add_column("step")
    table.add_column("status")
    table.add_column("time", justify="right")
    table.add_column("detail", overflow="fold", max_width=70)
    for sc in results:
        states = {step.status for step in sc.steps}
        if live and states <= {"pending"}:
            icon, style, word = _STATUS_STYLE["pending"]
            table.add_row(sc.name, f"{len(sc.steps)} steps", Text(f"{icon} {word}", style=style),
                          "", "")
            continue
        if live and states == {"passed"}:
            icon, style, word = _STATUS_STYLE["passed"]
            total = sum(step.duration for step in sc.steps)
            table.add_row(sc.name, f"{len(sc.steps)}/{len(sc.steps)} steps",
                          Text(f"{icon} {word}", style=style), f"{total:.2f}s",
                          Text(_one_line(sc.steps[-1].detail or "", 140), style="dim"))
            continue
        for index, step in enumerate(sc.steps):
            icon, style, word = _STATUS_STYLE[step.status]
            took = f"{step.duration:.2f}s" if step.status not in ("pending", "skipped") else ""
            note = step.message or step.detail or ""
            table.add_row(
                sc.name if index == 0 else "",
                step.name,
                Text(f"{icon} {word}", style=style),
                took,
                Text(_one_line(note, 140), style="red" if step.status in ("failed", "error")
                     else "dim"),
            )
    return table


# --------------------------------------------------------------------------- output


def _print_list(items: list[dict[str, Any]], fmt: str) -> None:
    if fmt != "table":
        from walletctl.render.rows import emit_rows

        emit_rows(items, fmt)
        return
    from walletctl.render.console import out

    width = max(len(i["name"]) for i in items)
    console = out()
    for item in items:
        console.print(f"{item['name']:<{width}}  {item['description']}", markup=False)


def _print_summary(report: SmokeReport, mask: Any) -> None:
    from walletctl.render.console import err, out

    console = out()
    if console.is_terminal and not err().is_terminal:
        console.print(_results_table(report.scenarios, live=False))
    passed = sum(1 for s in report.scenarios if s.status == "passed")
    failed = sum(1 for s in report.scenarios if s.status == "failed")
    skipped = sum(1 for s in report.scenarios if s.status == "skipped")
    lines = [
        f"run {report.run_id}: {passed} passed, {failed} failed, {skipped} skipped "
        f"({len(report.scenarios)} scenarios, {report.duration:.2f} s) against "
        f"{mask(report.target.get('base_url', '?'))}"
    ]
    if report.references and report.target.get("profile") == "(embedded sandbox)":
        # Its sandbox has stopped: the references cannot be looked up any more.
        lines.append(f"{len(report.references)} references in the embedded sandbox "
                     "(stopped with the run; --json-file keeps them)")
    elif report.references:
        lines.append("references (walletctl lookup REF):")
        lines.extend(f"  {r.reference}  {r.scenario}: {r.label}" for r in report.references)
    typer.echo("\n".join(lines))


def _finish(report: SmokeReport, junit: Path | None, json_file: Path | None,
            state: Any = None) -> None:
    from walletctl.cli.state import carry_options
    from walletctl.constants import ExitCode
    from walletctl.render.console import print_error, print_note

    for path, what in ((junit, "JUnit report"), (json_file, "JSON report")):
        if path is not None:
            print_note(f"{what} written to {path}")
    code = report.exit_code
    if report.aborted is not None:
        hint = (
            "check the profile's credentials (`walletctl profile check`)"
            if code == ExitCode.AUTH
            else None
        )
        print_error(f"smoke run aborted: {report.aborted}", carry_options(hint, state))
    elif code != ExitCode.OK:
        failed = [s.name for s in report.scenarios if s.status == "failed"]
        if failed:
            print_error(f"smoke failed: {', '.join(failed)}", carry_options(
                "`walletctl profile check` lists what each scenario needs", state))
        else:
            print_error("smoke failed: steps were skipped (--fail-on-skip)")
    if code != ExitCode.OK:
        raise typer.Exit(int(code))
