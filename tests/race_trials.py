"""How many times the race tests run their race: ``WALLETCTL_TEST_TRIALS``.

A race test starts two or four walletctl processes on one order at once and checks that money
moved once; each trial is a fresh race, and each costs a few processes' start-up. CI runs
:data:`TRIALS` of each (10: 20 to 40 processes contending per test); a stress run before a
release sets ``WALLETCTL_TEST_TRIALS=200`` and leaves it running.
"""

from __future__ import annotations

import os

ENV = "WALLETCTL_TEST_TRIALS"


def _trials(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{ENV}={text!r}: must be a whole number of 1 or more (e.g. 10, 200)")
    return int(text)


TRIALS = _trials(os.environ.get(ENV, "").strip() or "10")
