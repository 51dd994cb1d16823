"""``walletctl smoke``: end-to-end checks of a profile + credentials + gateway, for CI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.common import confirm_production, refuse_production
from walletctl.cli.state import ENV, carry_options, get_state
from walletctl.errors import ConfigError, UsageError
from walletctl.render.console import print_stderr

if TYPE_CHECKING:
    from walletctl.ops.smoke import SmokeOptions, SmokeReport


def register(app: typer.Typer) -> None:
    app.command("smoke")(smoke)


def smoke(
    ctx: typer.Context,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Run only this scenario (repeatable).", metavar="NAME")] = None,
    list_: Annotated[bool, typer.Option(
        "--list", help="List the scenarios with a one-line description.")] = False,
    profile: Annotated[str | None, typer.Option(
        "--profile", "-p", help="Profile to test (same as walletctl --profile).")] = None,
    embedded: Annotated[bool, typer.Option(
        "--embedded", help="Start a private sandbox on a free loopback port for the duration "
        "of the run and test against it.")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write a JUnit XML report (one testcase per step).",
        metavar="FILE")] = None,
    json_: Annotated[bool, typer.Option(
        "--json", help="Print the machine-readable JSON report on stdout.")] = False,
    json_file: Annotated[Path | None, typer.Option(
        "--json-file", help="Also write the JSON report to FILE.",
        metavar="FILE")] = None,
    currency: Annotated[str | None, typer.Option(
        "--currency", help="Currency of the scenarios (default: the profile's, else EUR).")
    ] = None,
    ref_prefix: Annotated[str, typer.Option(
        "--ref-prefix", help="Prefix of every reference of the run (references are "
        "PREFIX-RUNID-...).")] = "smoke",
    amount: Annotated[list[str] | None, typer.Option(
        "--amount", help="Override a scenario amount in major units, NAME=VALUE (repeatable; "
        "see docs/ci.md).", metavar="NAME=VALUE")] = None,
    approve_url_command: Annotated[str | None, typer.Option(
        "--approve-url-command", help="Approver for the redirect step: run CMD <redirectUrl>; "
        "exit status 0 = approved.", metavar="CMD")] = None,
    approve_timeout: Annotated[float, typer.Option(
        "--approve-timeout", help="Seconds the approver command may take.", min=1)] = 300.0,
    settle_timeout: Annotated[float, typer.Option(
        "--settle-timeout", help="Seconds to wait for an approved checkout to leave Pending.",
        min=0)] = 10.0,
    fail_on_skip: Annotated[bool, typer.Option(
        "--fail-on-skip", help="Exit 10 when a step was skipped (e.g. no headless approval on "
        "this gateway).")] = False,
    confirm_profile: Annotated[str | None, typer.Option(
        "--confirm-profile", metavar="NAME", help="The profile's name: a production profile's "
        "smoke run (it moves money) needs it without a terminal (on one, the name is asked "
        "for).")] = None,
) -> None:
    """Run end-to-end smoke scenarios against a profile's gateway or an embedded sandbox.

    Exit status: 0 every selected scenario passed, 10 a scenario failed, 9 credentials
    refused, 3 profile problem, 2 a production profile not confirmed (or with --embedded).
    """
    from walletctl.ops.smoke import SmokeOptions
    from walletctl.ops.smoke import scenarios as catalogue
    from walletctl.ops.smoke.report import to_json, to_junit, write_text
    from walletctl.ops.user_files import check_output
    from walletctl.render.smoke_views import render_scenarios, render_smoke

    state = get_state(ctx)
    if list_:
        render_scenarios(catalogue.describe(), state.output_format, json_flag=json_)
        return
    # bad options fail before a sandbox starts or a request is sent
    options = SmokeOptions(scenarios=scenario or [], ref_prefix=ref_prefix, currency=currency,
                           amounts=amount or [], approve_command=approve_url_command,
                           approve_timeout=approve_timeout, settle_timeout=settle_timeout,
                           fail_on_skip=fail_on_skip)
    for path, flag in ((junit, "--junit"), (json_file, "--json-file")):
        check_output(path, flag, create_parent=True)  # fails before the run, not after
    report, masker = _run(state, profile, embedded, options, confirm_profile)

    if junit is not None:
        write_text(junit, to_junit(report, masker))
    text = to_json(report, masker)
    if json_file is not None:
        write_text(json_file, text)
    code = render_smoke(report, text, masker.text, chosen=state.output, json_flag=json_,
                        written=((junit, "JUnit report"), (json_file, "JSON report")),
                        hint=lambda text: carry_options(text, state))
    if code:
        raise typer.Exit(code)


def _run(state: Any, profile_name: str | None, embedded: bool, options: SmokeOptions,
         confirm_profile: str | None = None) -> tuple[SmokeReport, Any]:
    from contextlib import nullcontext

    from walletctl.masking import Masker
    from walletctl.ops.smoke import run_smoke
    from walletctl.ops.smoke.target import embedded_sandbox
    from walletctl.render.smoke_views import smoke_observer

    base = None
    if profile_name is not None and not profile_name.strip():
        raise UsageError("--profile: must name a profile, not be empty (leave it out for the "
                         "default one)")
    if profile_name is not None:
        state.profile_name = profile_name
        state.typed_profile = profile_name  # carried into hints like the global -p
        state._profile = None
    if embedded:
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
    with embedded_sandbox() if base is None else nullcontext(base) as prof:
        observer = smoke_observer()
        try:
            trace = (lambda line: print_stderr(masker.text(line))) if state.verbose else None
            report = run_smoke(prof, options, observer=observer, trace=trace, masker=masker,
                               transport=None if embedded else ENV.transport, embedded=embedded)
        finally:
            observer.close()
    return report, masker
