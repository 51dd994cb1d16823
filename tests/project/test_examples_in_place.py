"""The examples run where they stand in a checkout (issue 46): ``pytest
examples/walletpay-python`` reads the example's own settings, not the checkout's (whose
``timeout`` needs pytest-timeout: without that plugin it was an INTERNALERROR)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_python_example_collects_in_place_without_the_checkouts_plugins() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:timeout", "-p", "no:cacheprovider",
         "--collect-only", "-q", "examples/walletpay-python"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert "INTERNALERROR" not in output, output[-2000:]
    assert done.returncode == 0, output[-2000:]
    assert "3 tests collected" in done.stdout, output[-2000:]
