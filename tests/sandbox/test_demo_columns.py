"""``walletctl sandbox demo`` in a real 80x40 terminal (tmux): no line wider than 80 columns,
nothing wrapped by the terminal, no word broken (the newcomer saw ``Aut`` / ``horizedByProvider``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from rich.cells import cell_len

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (.ci/run installs it)")

# Every "word" the demo prints that a fold could split, as it must appear whole.
REFERENCE = re.compile(r"ORDER-\d{6}-(SALE|AUTH2?)(-(CAP[12]|REF1|REV1))?")
PROVIDER_STATES = {"AuthorizedByProvider", "CapturedByProvider", "RefundedByProvider",
                   "ReversedByProvider"}


# a tmux server of this test's own (-L), never the user's or another test's
SOCKET = f"walletctl-demo-{os.getpid()}"


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout


def test_the_demo_fits_80_columns_without_breaking_a_word() -> None:
    session = f"walletctl-demo-{uuid.uuid4().hex[:8]}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (
        ("PYTHONPATH", os.environ.get("PYTHONPATH", "")), ("HOME", os.environ["HOME"])))
    command = (f"env -u COLUMNS -u LINES {env} {shlex.quote(sys.executable)} -m walletctl "
               "sandbox demo; echo DEMO-EXIT=$?; sleep 600")
    _tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "40", command)
    try:
        _tmux("set-option", "-t", session, "history-limit", "5000")
        deadline = time.monotonic() + 120
        screen = ""
        while time.monotonic() < deadline:
            screen = _tmux("capture-pane", "-p", "-t", session, "-S", "-")
            if "DEMO-EXIT=" in screen:
                break
            time.sleep(0.5)
        joined = _tmux("capture-pane", "-p", "-J", "-t", session, "-S", "-")
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], check=False, timeout=30)
    assert "DEMO-EXIT=0" in screen, screen
    lines = screen.rstrip("\n").splitlines()
    # nothing the terminal had to wrap (-J joins wrapped lines back together)
    assert joined.rstrip("\n").splitlines() == lines, "the terminal wrapped a line"
    assert max(cell_len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert "Transactions for ORDER-" in text  # the lookup table is there
    for token in re.findall(r"ORDER-[\w-]*", text):
        assert REFERENCE.fullmatch(token), f"reference broken or folded: {token!r}"
    for token in re.findall(r"\b\w*ByProvider\b|\b\w+ByProv\w*", text):
        assert token in PROVIDER_STATES, f"provider state broken: {token!r}"
    for word in ("customer", "pre-authorisation", "Approved"):
        assert word in text
    assert not re.search(r"\bcust$|^omer\b", text, re.MULTILINE)
