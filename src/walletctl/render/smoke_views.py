"""Rendering of ``walletctl smoke``: the run's progress on stderr (a live table on a
terminal, one line per step otherwise), the scenario list, the summary and why a run failed."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.constants import ExitCode
from walletctl.render.console import (
    err,
    escape,
    log_event,
    log_json,
    out,
    print_error,
    print_message,
    print_note,
)
from walletctl.render.fit import fit_table, print_phrases
from walletctl.render.formats import records, shape, show

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from walletctl.ops.smoke import ScenarioResult, SmokeReport, StepResult

_STATUS_STYLE = {
    "pending": ("·", "dim", "pending"),
    "running": ("…", "cyan", "running"),
    "passed": ("✓", "green", "passed"),
    "failed": ("✗", "bold red", "FAILED"),
    "error": ("!", "bold red", "ERROR"),
    "skipped": ("-", "yellow", "skipped"),
}


# --------------------------------------------------------------------------- progress views


def smoke_observer() -> Any:
    """The run's progress on stderr: a live table on a terminal, a line per step else."""
    from walletctl.ops.smoke import SmokeObserver

    console = err()

    class LineView(SmokeObserver):
        """One line per finished step (CI logs)."""

        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def step_finished(self, result: StepResult) -> None:
            self.counts[result.status] = self.counts.get(result.status, 0) + 1
            if log_json():  # an event a CI system can count
                log_event("error" if result.status in ("failed", "error") else "info",
                          f"{result.scenario} / {result.name}: {result.status}",
                          event="smoke.step", scenario=result.scenario, step=result.name,
                          status=result.status, duration=round(result.duration, 3),
                          note=_shown_note(result) or None, needs=result.needs,
                          counts=dict(self.counts))
                return
            _icon, _, word = _STATUS_STYLE[result.status]
            took = f" ({result.duration:.2f} s)" if result.status != "skipped" else ""
            note = _shown_note(result)
            sys.stderr.write(f"{word.upper():8} {result.scenario} / {result.name}{took}"
                             + (f": {_one_line(note)}" if note else "") + "\n")
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

        def _table(self) -> Any:
            return _results_table(self.results, live=True, width=self.console.width)

        def step_started(self, result: StepResult) -> None:
            if self.live is not None:
                self.live.update(self._table(), refresh=True)

        step_finished = step_started

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


def _shown_note(step: StepResult) -> str:
    """A step's note for people: a skipped step says why in short (the reason an abort or
    a failed step gave is on that step's own line, once); the reports keep it whole."""
    note = step.message or step.detail or ""
    if step.status == "skipped" and note.startswith("not run: "):
        return note.split(" (", 1)[0]
    return note


def _results_table(results: list[ScenarioResult], *, live: bool, width: int) -> Any:
    """Steps of each scenario, fitted to ``width`` (live: see :func:`_scenario_rows`)."""
    rows = [row for sc in results for row in _scenario_rows(sc, live=live)]
    table, _ = fit_table("walletctl smoke" if live else None,
                         ["scenario", "step", "status", "time", "detail"], rows,
                         justify={3: "right"}, no_wrap=(2, 3), drop=(3, 1), width=width)
    return table


def _scenario_rows(sc: ScenarioResult, *, live: bool) -> list[list[str]]:
    """A scenario's rows (Rich markup): one per step, or (live, so the table stays the height
    of a terminal) one when it is all pending or passed."""
    def status(word: str) -> str:
        icon, style, text = _STATUS_STYLE[word]
        return f"[{style}]{icon} {text}[/]"

    states = {step.status for step in sc.steps}
    name = escape(sc.name)
    if live and states <= {"pending"}:
        return [[name, f"{len(sc.steps)} steps", status("pending"), "", ""]]
    if live and states == {"passed"}:
        total = sum(step.duration for step in sc.steps)
        return [[name, f"{len(sc.steps)}/{len(sc.steps)} steps", status("passed"),
                 f"{total:.2f}s", f"[dim]{escape(_one_line(sc.steps[-1].detail or ''))}[/]"]]
    rows: list[list[str]] = []
    for index, step in enumerate(sc.steps):
        took = f"{step.duration:.2f}s" if step.status not in ("pending", "skipped") else ""
        style = "red" if step.status in ("failed", "error") else "dim"
        rows.append([name if index == 0 else "", escape(step.name), status(step.status), took,
                     f"[{style}]{escape(_one_line(_shown_note(step), 400))}[/]"])
    return rows


# --------------------------------------------------------------------------- output


def render_scenarios(items: list[dict[str, Any]], fmt: str, *, json_flag: bool) -> None:
    """``smoke --list``: the scenarios and what each checks (``--json``: as JSON)."""
    if json_flag:
        fmt = "json"
    def table() -> None:
        width = max(len(i["name"]) for i in items)
        console = out()
        for item in items:
            console.print(f"{item['name']:<{width}}  {item['description']}", markup=False)

    show(records(items, table=table), fmt)


def render_smoke(report: SmokeReport, document: str, mask: Callable[[str], str], *,
                 chosen: str | None, json_flag: bool,
                 written: Iterable[tuple[Path | None, str]],
                 hint: Callable[[str | None], str | None]) -> int:
    """The run's JSON ``document`` (``--json`` or ``-o json``) or summary, the report files
    ``written`` and why it failed; the exit code. ``hint`` completes a hint's commands."""
    if json_flag or (chosen is not None and shape(chosen) == "document"):
        sys.stdout.write(document)
    else:
        _summary(report, mask)
    return _finish(report, written, hint)


def _summary(report: SmokeReport, mask: Callable[[str], str]) -> None:
    console = out()
    if console.is_terminal and not err().is_terminal:
        console.print(_results_table(report.scenarios, live=False, width=console.width),
                      crop=False)
    count = Counter(s.status for s in report.scenarios)
    print_phrases([f"run {escape(report.run_id)}:", f"{count['passed']} passed,",
                   f"{count['failed']} failed,", f"{count['skipped']} skipped",
                   f"({len(report.scenarios)} scenarios,",
                   f"{report.duration:.2f} s)", "against",
                   escape(mask(report.target.get("base_url", "?")))])
    if report.references and report.target.get("profile") == "(embedded sandbox)":
        # Its sandbox has stopped: the references cannot be looked up any more.
        print_message(f"{len(report.references)} references in the embedded sandbox "
                      "(stopped with the run; --json-file keeps them)")
    elif report.references:
        print_message("references (walletctl lookup REF):")
        for r in report.references:
            print_message(f"  {r.reference}  {r.scenario}: {r.label}", indent="    ")


def _finish(report: SmokeReport, written: Iterable[tuple[Path | None, str]],
            hint: Callable[[str | None], str | None]) -> int:
    for path, what in written:
        if path is not None:
            print_note(f"{what} written to {path}")
    code = report.exit_code
    if report.aborted is not None:
        why = report.abort_hint or ("check the profile's credentials (`walletctl profile "
                                    "check`)" if code == ExitCode.AUTH else None)
        print_error(f"smoke run aborted: {report.aborted}", hint(why))
    elif code != ExitCode.OK:
        failed = [s.name for s in report.scenarios if s.status == "failed"]
        if failed:
            print_error(f"smoke failed: {', '.join(failed)}", hint(
                report.first_need() or "`walletctl profile check` lists what each scenario "
                "needs"))
        else:
            print_error("smoke failed: steps were skipped (--fail-on-skip)")
    return int(code)
