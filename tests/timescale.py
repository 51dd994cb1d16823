"""One factor for every wall-clock bound in the suite: ``WALLETCTL_TEST_TIME_SCALE``.

A bound such as "the batch stops within 15 s" holds on a quiet machine; on a machine running
eight other suites the same code can take several times as long without being wrong. Rather
than each test guessing its own slack, every upper bound on elapsed time is written as
``scaled(15)``: 15 s times the factor (1 by default; ``WALLETCTL_TEST_TIME_SCALE=3`` on a loaded
box). Lower bounds ("it waited at least 1 s") are never scaled: waiting longer never makes
them fail. Speed targets live in benchmarks/, as ratios measured in one run.
"""

from __future__ import annotations

import math
import os

ENV = "WALLETCTL_TEST_TIME_SCALE"


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{ENV}={text!r}: must be a number above 0 (e.g. 1, 2.5)")
    return value


SCALE = _factor(os.environ.get(ENV, "").strip() or "1")


def scaled(seconds: float) -> float:
    """``seconds`` times the suite's factor: an upper bound on elapsed time."""
    return seconds * SCALE
