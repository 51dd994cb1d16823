"""What the two batch front ends share: flow-control options and how a run that stopped
early exits (``capture|refund|reverse --batch`` and ``lookup --batch``)."""

from __future__ import annotations

from typing import Protocol

from walletctl.constants import ExitCode
from walletctl.errors import UsageError

MAX_CONCURRENCY = 512


class Stoppable(Protocol):
    """The part of a run's report that says whether, and why, it stopped early."""

    interrupted: bool
    fatal_code: int | None
    breaker_open: bool


def check_flow_options(concurrency: int, rate: float | None, max_failures: int) -> None:
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise UsageError(f"--concurrency: must be between 1 and {MAX_CONCURRENCY}")
    if rate is not None and not rate > 0:
        raise UsageError("--rate: must be greater than 0 (requests per second)")
    if max_failures < 1:
        raise UsageError("--max-failures: must be at least 1")


def stop_code(report: Stoppable) -> int | None:
    """The exit code of a run that stopped early (Ctrl-C, a fatal answer, the circuit
    breaker), or None when it ran to the end."""
    if report.interrupted:
        return int(ExitCode.INTERRUPTED)
    if report.fatal_code is not None:
        return report.fatal_code
    if report.breaker_open:
        return int(ExitCode.GATEWAY)
    return None
