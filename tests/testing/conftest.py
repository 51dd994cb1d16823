"""Real processes for the CI-service and plugin tests: ``walletctl sandbox serve``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import WALLETCTL, wait_for_file


@pytest.fixture(autouse=True)
def _a_merchants_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs these tests start (pytester) load what a merchant's project would: the
    plugins installed with walletctl, walletctl's own through its entry point; not the
    property-testing plugins walletctl's own suite uses (schemathesis alone took half a
    second of each run to load)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:schemathesis -p no:hypothesispytest")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    ready = tmp_path / "run" / "sandbox.url"
    ready.parent.mkdir()
    proc = subprocess.Popen([*WALLETCTL, "sandbox", "serve", "--port", "0", "--quiet",
                             "--ready-file", str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc, ready
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)




@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[str]:
    """A separately started ``walletctl sandbox serve`` (key ``ci-key``, clock control): its URL."""
    ready = tmp_path / "served.url"
    proc = subprocess.Popen([*WALLETCTL, "sandbox", "serve", "--port", "0", "--quiet",
                             "--clock-control", "--api-key", "ci-key", "--ready-file",
                             str(ready)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        yield wait_for_file(ready, proc).strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
