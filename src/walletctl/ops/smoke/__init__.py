"""``walletctl smoke``: prove a profile, its credentials and its gateway work end to end.

Library first: :func:`run_smoke` runs the selected scenarios against a profile (or a private
embedded sandbox) and returns a :class:`SmokeReport`; :mod:`.report` turns it into JUnit XML
or JSON. Exit codes (``SmokeReport.exit_code``): 0 every selected scenario passed,
10 a scenario failed, 9 credentials refused (the first 401/403 aborts the run), 3 a profile
problem (raised as ConfigError before anything is sent, or met during the run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from walletctl.errors import ConfigError, UsageError
from walletctl.masking import Masker
from walletctl.ops.smoke.framework import (
    RunContext,
    Scenario,
    ScenarioResult,
    ScenarioRun,
    SmokeObserver,
    SmokeReport,
    Step,
    StepResult,
    StepSkipped,
    check,
    check_equal,
    new_run_id,
    run_scenarios,
)

if TYPE_CHECKING:
    import httpx

    from walletctl.config.profile import Profile
    from walletctl.ops.smoke.transport import ExchangeLog

__all__ = [
    "Masker",
    "RunContext",
    "Scenario",
    "ScenarioResult",
    "ScenarioRun",
    "SmokeObserver",
    "SmokeOptions",
    "SmokeReport",
    "Step",
    "StepResult",
    "StepSkipped",
    "check",
    "check_equal",
    "new_run_id",
    "run_scenarios",
    "run_smoke",
    "smoke_profile",
    "validate_options",
]


@dataclass
class SmokeOptions:
    scenarios: list[str] = field(default_factory=list)  # names; empty = all
    ref_prefix: str = "smoke"
    currency: str | None = None
    amounts: list[str] = field(default_factory=list)  # NAME=VALUE overrides
    approve_command: str | None = None
    approve_timeout: float = 300.0
    settle_timeout: float = 10.0
    fail_on_skip: bool = False
    run_id: str | None = None  # generated when None


@contextmanager
def smoke_profile(profile: Profile | None, *, embedded: bool) -> Iterator[Profile]:
    """The profile to test: the given one, or a private embedded sandbox's for the duration."""
    if embedded:
        from walletctl.ops.smoke.target import embedded_sandbox

        fmt = profile.amount_format if profile is not None else "minor"
        with embedded_sandbox(amount_format=fmt) as sandbox_profile:
            yield sandbox_profile
        return
    if profile is None:
        raise ConfigError("no profile selected", hint="pass --profile NAME or --embedded")
    yield profile


def run_smoke(
    profile: Profile,
    options: SmokeOptions,
    *,
    observer: SmokeObserver | None = None,
    transport: httpx.BaseTransport | None = None,
    trace: Callable[[str], None] | None = None,
    embedded: bool = False,
    masker: Masker | None = None,
    log: ExchangeLog | None = None,
) -> SmokeReport:
    """Run the selected scenarios against ``profile``; never raises for a failing step.

    Raises ConfigError (profile/secret problems found before anything is sent) and UsageError
    (bad options). ``masker`` collects every secret seen; pass one to mask other output too.
    ``log`` receives the (masked) summary of every HTTP exchange of the run; ``trace`` gets
    the gateway client's masked request/response trace lines (``--verbose``).
    """
    from walletctl.ops.smoke.target import open_target
    from walletctl.ops.smoke.transport import ExchangeLog

    selected, amounts = validate_options(options)
    masker = masker if masker is not None else Masker()
    log = log if log is not None else ExchangeLog(masker)
    ctx = RunContext(
        run_id=options.run_id or new_run_id(),
        masker=masker,
        ref_prefix=_check_prefix(options.ref_prefix),
        exchanges=log,
        params={"amounts": amounts},
    )
    with open_target(profile, masker, log, options, transport=transport, trace=trace,
                     embedded=embedded, history_run=ctx.run_id) as target:
        ctx.target = target
        info = {
            "profile": "(embedded sandbox)" if embedded else profile.name,
            "base_url": _without_userinfo(profile.base_url),
            "merchant_id": profile.merchant_id,
            "store_id": profile.store_id,
            "currency": target.currency,
        }
        return run_scenarios(
            selected, ctx, observer=observer, target_info=info, fail_on_skip=options.fail_on_skip
        )


def _without_userinfo(url: str) -> str:
    """``https://user:pass@host/`` -> ``https://host/`` (a report never shows credentials)."""
    import httpx

    try:
        return str(httpx.URL(url).copy_with(userinfo=b""))
    except (httpx.InvalidURL, TypeError, ValueError):
        return url


def validate_options(options: SmokeOptions) -> tuple[list[Scenario], Any]:
    """Check the options before anything starts; returns (scenarios, amounts). UsageError."""
    from walletctl.ops.smoke import scenarios as catalogue
    from walletctl.ops.smoke.scenarios import Amounts

    _check_prefix(options.ref_prefix)
    if options.approve_command is not None:
        _check_command(options.approve_command)
    return catalogue.select(options.scenarios), Amounts().with_overrides(options.amounts)


def _check_command(command: str) -> None:
    import shlex
    import shutil

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--approve-url-command: {exc}") from None
    if not argv:
        raise UsageError("--approve-url-command: must not be empty")
    if shutil.which(argv[0]) is None:
        raise UsageError(f"--approve-url-command: {argv[0]!r} was not found or is not executable")


MAX_PREFIX_LENGTH = 24


def _check_prefix(prefix: str) -> str:
    """A prefix is itself a reference (the rule of models.fields), at most
    :data:`MAX_PREFIX_LENGTH` characters: every reference minted from it stays within the
    rule (``PREFIX-RUNID-SCENARIO-TAG``)."""
    from walletctl.models.fields import check_reference

    if len(prefix) > MAX_PREFIX_LENGTH:
        raise UsageError(f"--ref-prefix: must be at most {MAX_PREFIX_LENGTH} characters "
                         f"(got {len(prefix)}): the run's references add up to 40 more")
    try:
        return check_reference(prefix)
    except ValueError as exc:
        raise UsageError(f"--ref-prefix: {exc}") from None
