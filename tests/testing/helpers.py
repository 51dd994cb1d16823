"""Helpers for the CI-service and plugin tests: run walletctl, wait for a ready file."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from cli_runner import WALLETCTL as WALLETCTL  # re-exported: the tests of this area use it
from cli_runner import run_walletctl


def walletctl(*args: str, timeout: float = 60,
              process: bool = False) -> subprocess.CompletedProcess[str]:
    """``walletctl ARGS`` in this process (tests/cli_runner.py); ``process=True``: a real
    ``python -m walletctl`` ended after ``timeout`` seconds (a ``serve`` that could block)."""
    if not process:
        return run_walletctl(args)
    return subprocess.run([*WALLETCTL, *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def wait_for_file(path: Path, proc: subprocess.Popen[str], limit: float = 60) -> str:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if path.exists():
            return path.read_text(encoding="utf-8")
        assert proc.poll() is None, f"serve exited early ({proc.returncode})"
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")
