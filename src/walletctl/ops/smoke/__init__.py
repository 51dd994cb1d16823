"""``walletctl smoke`` (docs/ci.md): :func:`run_smoke` runs :class:`Scenario` s and returns a
:class:`SmokeReport`; a :class:`SmokeObserver` hears the progress. A step returns (passed) or
raises :class:`StepFailed`, :class:`StepSkipped`, a WalletctlError (a failure; a 401/403 or a
profile problem aborts the run) or anything else (an error, masked)."""

from __future__ import annotations

import secrets as _secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from walletctl.constants import ExitCode
from walletctl.errors import (
    ConfigError,
    GatewayError,
    NotConnectedError,
    RedirectError,
    UsageError,
    WalletctlError,
)
from walletctl.masking import Masker

if TYPE_CHECKING:
    import httpx

    from walletctl.config.profile import Profile
    from walletctl.ops.smoke.scenarios import Amounts
    from walletctl.ops.smoke.target import Exchange, ExchangeLog, Target

StepStatus = Literal["pending", "running", "passed", "failed", "error", "skipped"]
ScenarioStatus = Literal["passed", "failed", "skipped"]



class StepFailed(Exception):
    """An assertion of a step did not hold; the message says what was expected and found."""


class StepSkipped(Exception):
    """The step cannot run against this target; the message says why."""


class RunAborted(Exception):
    """Raised by a step (or mapped by the runner) to stop the whole run at once."""

    def __init__(self, message: str, exit_code: ExitCode, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.hint = hint  # what to do (the error's own hint, e.g. the service secret's)


def check(condition: bool, message: str) -> None:
    """Fail the current step with ``message`` unless ``condition`` holds."""
    if not condition:
        raise StepFailed(message)


def check_equal(actual: Any, expected: Any, what: str) -> None:
    """Fail the current step with ``what: expected X, got Y`` unless they are equal."""
    if actual != expected:
        raise StepFailed(f"{what}: expected {_show(expected)}, got {_show(actual)}")


def _show(value: Any) -> str:
    return str(value) if not isinstance(value, str) else repr(value)


def new_run_id(now: datetime | None = None) -> str:
    """A short id unique per run: UTC time + 24 random bits (``1122051730-a1b2c3``)."""
    stamp = (now or datetime.now(UTC)).strftime("%m%d%H%M%S")
    return f"{stamp}-{_secrets.token_hex(3)}"


@dataclass(frozen=True)
class Step:
    """``needs``: what the step needs from the profile and the gateway, in words (the hint
    of a failed step)."""

    name: str
    action: Callable[[ScenarioRun], str | None]
    needs: str = ""


@dataclass(frozen=True)
class Scenario:
    """A named sequence of steps. ``code`` is the short tag used inside its references."""

    name: str
    code: str
    description: str
    steps: tuple[Step, ...]
    # Returns a reason when the scenario cannot run at all here (e.g. a module not installed).
    unavailable: Callable[[RunContext], str | None] | None = None


@dataclass(frozen=True)
class Reference:
    scenario: str
    reference: str
    label: str


@dataclass
class StepResult:
    scenario: str
    name: str
    status: StepStatus = "pending"
    duration: float = 0.0
    message: str | None = None  # failure / error / skip reason (masked)
    detail: str | None = None  # one-line outcome of a passed step (masked)
    error_type: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    needs: str | None = None  # a failed step: what it needs (its Step's ``needs``)


@dataclass
class ScenarioResult:
    name: str
    description: str
    steps: list[StepResult]
    references: list[str] = field(default_factory=list)
    duration: float = 0.0
    started_at: str | None = None

    @property
    def status(self) -> ScenarioStatus:
        states = {s.status for s in self.steps}
        if states & {"failed", "error"}:
            return "failed"
        if "skipped" in states or not self.steps:
            return "skipped"
        return "passed"

    def count(self, *statuses: StepStatus) -> int:
        return sum(1 for s in self.steps if s.status in statuses)


@dataclass
class SmokeReport:
    run_id: str
    target: dict[str, str]
    started_at: str
    scenarios: list[ScenarioResult]
    references: list[Reference]
    duration: float = 0.0
    aborted: str | None = None
    abort_code: ExitCode | None = None
    abort_hint: str | None = None
    fail_on_skip: bool = False

    @property
    def exit_code(self) -> ExitCode:
        if self.abort_code is not None:
            return self.abort_code
        statuses = {s.status for s in self.scenarios}
        if "failed" in statuses or (self.fail_on_skip and "skipped" in statuses):
            return ExitCode.SMOKE_FAILED
        return ExitCode.OK

    @property
    def steps(self) -> list[StepResult]:
        return [step for sc in self.scenarios for step in sc.steps]

    def first_need(self) -> str | None:
        """The hint of a failed run: what its first failed step needs."""
        failed = next((st for st in self.steps if st.status in ("failed", "error")), None)
        if failed is None or not failed.needs:
            return None
        return f"step '{failed.name}' ({failed.scenario}) needs {failed.needs}"

    def count(self, *statuses: StepStatus) -> int:
        return sum(sc.count(*statuses) for sc in self.scenarios)


class SmokeObserver:
    """Progress callbacks (the CLI's live view overrides them); the default does nothing."""

    def plan(self, results: Sequence[ScenarioResult]) -> None:
        """Called once with every scenario's (pending) results before anything runs."""

    def step_started(self, result: StepResult) -> None:
        """A step began running."""

    def step_finished(self, result: StepResult) -> None:
        """A step finished (or was skipped without running)."""


@dataclass
class RunContext:
    """Everything the steps share for one run: ids, masking, the target and the exchange log."""

    run_id: str
    masker: Masker
    ref_prefix: str = "smoke"
    target: Target | None = None  # when running real scenarios
    exchanges: ExchangeLog | None = None
    references: list[Reference] = field(default_factory=list)
    amounts: Amounts | None = None  # the scenarios' amounts (None: the defaults)

    def reference(self, scenario: Scenario, tag: str) -> str:
        from walletctl.models.fields import check_reference

        ref = f"{self.ref_prefix}-{self.run_id}-{scenario.code}-{tag}"
        try:
            return check_reference(ref)
        except ValueError as exc:
            raise ConfigError(f"reference {ref[:80]!r}: {exc}", location="--ref-prefix",
                              hint="use a shorter prefix") from None


class ScenarioRun:
    """The state of one scenario while it runs (what its steps see)."""

    def __init__(self, ctx: RunContext, scenario: Scenario, result: ScenarioResult) -> None:
        self.ctx = ctx
        self.scenario = scenario
        self.result = result
        self.state: dict[str, Any] = {}

    @property
    def target(self) -> Target:
        if self.ctx.target is None:
            raise RuntimeError("this scenario needs a target")
        return self.ctx.target

    def ref(self, tag: str, label: str = "") -> str:
        """Mint (once per tag) the unique reference of this run for ``tag``, and record it."""
        key = f"ref:{tag}"
        if key not in self.state:
            ref = self.ctx.reference(self.scenario, tag)
            self.state[key] = ref
            self.result.references.append(ref)
            self.ctx.references.append(Reference(self.scenario.name, ref, label or tag))
        return str(self.state[key])


def _abort_for(exc: BaseException) -> RunAborted | None:
    """Errors that make every later step pointless: refused credentials, profile problems."""
    if isinstance(exc, RunAborted):
        return exc
    if isinstance(exc, GatewayError) and exc.status in (401, 403):
        return RunAborted(f"credentials refused: {exc.message}", ExitCode.AUTH, exc.hint)
    if isinstance(exc, ConfigError):
        return RunAborted(f"profile problem: {exc.message}", ExitCode.CONFIG, exc.hint)
    if isinstance(exc, NotConnectedError):  # every later step would find the same: stop
        return RunAborted(f"the gateway could not be reached: {exc.message}", ExitCode.NETWORK,
                          exc.hint or "check the profile's base_url and the network (nothing "
                          "was sent)")
    return None


def run_scenarios(scenarios: Sequence[Scenario], ctx: RunContext, *,
                  observer: SmokeObserver | None = None,
                  target_info: dict[str, str] | None = None, fail_on_skip: bool = False,
                  clock: Callable[[], float] = time.perf_counter) -> SmokeReport:
    """Run ``scenarios`` in order and return the report (never raises for a failing step)."""
    obs = observer or SmokeObserver()
    started = datetime.now(UTC)
    results = [ScenarioResult(sc.name, sc.description,
                              [StepResult(sc.name, st.name) for st in sc.steps])
               for sc in scenarios]
    report = SmokeReport(run_id=ctx.run_id, target=dict(target_info or {}),
                         started_at=started.isoformat(timespec="seconds"), scenarios=results,
                         references=ctx.references, fail_on_skip=fail_on_skip)
    obs.plan(results)
    run_start = clock()
    for scenario, result in zip(scenarios, results, strict=True):
        result.started_at = datetime.now(UTC).isoformat(timespec="seconds")
        sc_start = clock()
        if report.aborted is not None:
            _skip_rest(result.steps, f"not run: run aborted ({report.aborted})", obs)
            continue
        reason = scenario.unavailable(ctx) if scenario.unavailable else None
        if reason:
            _skip_rest(result.steps, ctx.masker.text(reason), obs)
            continue
        try:
            aborted = _run_one(scenario, result, ctx, obs, clock)
        except KeyboardInterrupt:  # keep what ran: the reports are written, exit 130
            left = [st for st in result.steps if st.status in ("pending", "running")]
            _skip_rest(left, "not run: interrupted (Ctrl-C)", obs)
            aborted = RunAborted("interrupted (Ctrl-C)", ExitCode.INTERRUPTED)
        result.duration = clock() - sc_start
        if aborted is not None:
            report.aborted = ctx.masker.text(aborted.message)
            report.abort_code = aborted.exit_code
            report.abort_hint = aborted.hint and ctx.masker.text(aborted.hint)
    report.duration = clock() - run_start
    return report


def _run_one(scenario: Scenario, result: ScenarioResult, ctx: RunContext, obs: SmokeObserver,
             clock: Callable[[], float]) -> RunAborted | None:
    run = ScenarioRun(ctx, scenario, result)
    mask = ctx.masker.text
    for index, (step, step_result) in enumerate(zip(scenario.steps, result.steps, strict=True)):
        step_result.status = "running"
        obs.step_started(step_result)
        mark = ctx.exchanges.mark() if ctx.exchanges is not None else 0
        minted = len(ctx.references), len(result.references)
        start = clock()
        stop_reason: str | None = f"not run: step '{step.name}' failed"
        aborted: RunAborted | None = None
        try:
            detail = step.action(run)
        except StepFailed as exc:
            _ended(step_result, "failed", mask(str(exc)), "AssertionError")
        except StepSkipped as exc:
            _ended(step_result, "skipped", mask(str(exc)), None)
            stop_reason = f"not run: step '{step.name}' was skipped ({mask(str(exc))})"
        except Exception as exc:
            aborted = _abort_for(exc)
            if aborted is not None:
                _ended(step_result, "failed", mask(aborted.message), _type_name(exc))
                stop_reason = f"not run: run aborted ({mask(aborted.message)})"
            elif isinstance(exc, WalletctlError):
                _ended(step_result, "failed", mask(exc.message), _type_name(exc))
            else:  # a bug: report its type and (masked) text, never a traceback
                _ended(step_result, "error", mask(f"{type(exc).__name__}: {exc}"),
                       type(exc).__name__)
                stop_reason = f"not run: step '{step.name}' raised an error"
        else:
            step_result.status = "passed"
            step_result.detail = mask(detail) if detail else None
            stop_reason = None
        step_result.duration = clock() - start
        if step_result.status in ("failed", "error") and step.needs:
            step_result.needs = step.needs
        if ctx.exchanges is not None:
            step_result.exchanges = ctx.exchanges.since(mark)
        if (aborted is not None and aborted.exit_code == ExitCode.NETWORK
                and all(ex.status is None for ex in step_result.exchanges)):
            # no connection: this step's references were never sent (nothing to look up)
            del ctx.references[minted[0]:], result.references[minted[1]:]
        obs.step_finished(step_result)
        if stop_reason is not None:
            _skip_rest(result.steps[index + 1 :], stop_reason, obs)
            return aborted
    return None


def _ended(step: StepResult, status: StepStatus, message: str, error_type: str | None) -> None:
    step.status, step.message, step.error_type = status, message, error_type


def _skip_rest(steps: Sequence[StepResult], reason: str, obs: SmokeObserver) -> None:
    for step in steps:
        step.status = "skipped"
        step.message = reason
        obs.step_finished(step)


def _type_name(exc: BaseException) -> str:
    """The report's error type (JSON ``error_type``, JUnit ``type``): CI jobs match on these
    names, so the finer classes added later keep their parent's (``NotConnectedError`` is
    reported as ``NetworkError``, ``RedirectError`` as ``ResponseError``)."""
    for cls in type(exc).__mro__:
        if cls not in (NotConnectedError, RedirectError):
            return cls.__name__
    return type(exc).__name__  # pragma: no cover - object is always in the MRO


@dataclass
class SmokeOptions:
    """A run's options, checked when made: a UsageError before anything starts."""

    scenarios: list[str] = field(default_factory=list)  # names; empty = all
    ref_prefix: str = "smoke"
    currency: str | None = None
    amounts: list[str] = field(default_factory=list)  # NAME=VALUE overrides
    approve_command: str | None = None
    approve_timeout: float = 300.0
    settle_timeout: float = 10.0
    fail_on_skip: bool = False
    run_id: str | None = None  # generated when None
    selected: list[Scenario] = field(init=False)  # the scenarios named, in catalogue order
    amounts_of: Amounts = field(init=False)  # the defaults with ``amounts`` applied

    def __post_init__(self) -> None:
        from walletctl.ops.smoke import scenarios as catalogue

        _check_prefix(self.ref_prefix)
        if self.approve_command is not None:
            _check_command(self.approve_command)
        self.selected = catalogue.select(self.scenarios)
        self.amounts_of = catalogue.Amounts().with_overrides(self.amounts)


def run_smoke(profile: Profile, options: SmokeOptions, *, observer: SmokeObserver | None = None,
              transport: httpx.BaseTransport | None = None,
              trace: Callable[[str], None] | None = None, embedded: bool = False,
              masker: Masker | None = None, log: ExchangeLog | None = None) -> SmokeReport:
    """Run the selected scenarios against ``profile`` (a failing step is in the report);
    ``masker`` collects the secrets seen, ``log`` every exchange, ``trace`` --verbose lines."""
    from walletctl.ops.smoke.target import ExchangeLog, open_target

    masker = masker if masker is not None else Masker()
    log = log if log is not None else ExchangeLog(masker)
    ctx = RunContext(run_id=options.run_id or new_run_id(), masker=masker,
                     ref_prefix=options.ref_prefix, exchanges=log, amounts=options.amounts_of)
    with open_target(profile, masker, log, options, transport=transport, trace=trace,
                     embedded=embedded, history_run=ctx.run_id) as target:
        ctx.target = target
        info = {"profile": "(embedded sandbox)" if embedded else profile.name,
                "base_url": _without_userinfo(profile.base_url),
                "merchant_id": profile.merchant_id, "store_id": profile.store_id,
                "currency": target.currency}
        return run_scenarios(options.selected, ctx, observer=observer, target_info=info,
                             fail_on_skip=options.fail_on_skip)


def _without_userinfo(url: str) -> str:
    """``https://user:pass@host/`` -> ``https://host/`` (a report never shows credentials)."""
    import httpx

    try:
        return str(httpx.URL(url).copy_with(userinfo=b""))
    except (httpx.InvalidURL, TypeError, ValueError):
        return url


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
    """A prefix is itself a reference, short enough for every reference minted from it
    (``PREFIX-RUNID-SCENARIO-TAG``)."""
    from walletctl.models.fields import check_reference

    if len(prefix) > MAX_PREFIX_LENGTH:
        raise UsageError(f"--ref-prefix: must be at most {MAX_PREFIX_LENGTH} characters "
                         f"(got {len(prefix)}): the run's references add up to 40 more")
    try:
        return check_reference(prefix)
    except ValueError as exc:
        raise UsageError(f"--ref-prefix: {exc}") from None
