"""A batch interrupted with Ctrl-C in a real terminal (tmux) against a sandbox on a real port:
the bar stays at the rows done (not at the total), the summary's rate counts the rows sent
over the time the run took, and the resumed run's rate counts only the rows it sent.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from first_hour_fixtures import Served

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (.ci/run installs it)")
ROWS = 60


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def test_an_interrupted_batch_shows_what_was_done_and_honest_rates(
        served_sandbox: Served) -> None:
    sb = served_sandbox
    root = sb.config.parent
    sb.run("sandbox", "seed", str(ROWS), "--csv", str(root / "rows.csv"))
    sb.run("sandbox", "faults", "--latency", "150")  # about 25 rows/s at --concurrency 4
    socket, session = f"walletctl-bar-{uuid.uuid4().hex[:8]}", "bar"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sb.env.items() if k.isidentifier()
                   and k != "COLUMNS")
    command = (f"cd {shlex.quote(str(root))} && env {env} {shlex.quote(sys.executable)} -m "
               "walletctl -o table capture --batch rows.csv --concurrency 4; "
               "echo BATCH-EXIT=$?; sleep 600")
    _tmux(socket, "new-session", "-d", "-s", session, "-x", "100", "-y", "40", command)
    try:
        deadline = time.monotonic() + 60
        screen = ""
        while time.monotonic() < deadline:  # Ctrl-C once some rows are done, not all
            screen = _tmux(socket, "capture-pane", "-p", "-t", session)
            done = re.findall(rf"(\d+)/{ROWS}", screen)
            if done and 5 <= int(done[-1]) < ROWS // 2:
                break
            time.sleep(0.1)
        _tmux(socket, "send-keys", "-t", session, "C-c")
        while time.monotonic() < deadline and "BATCH-EXIT=" not in screen:
            time.sleep(0.3)
            screen = _tmux(socket, "capture-pane", "-p", "-J", "-t", session, "-S", "-")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, timeout=30)
    assert "BATCH-EXIT=130" in screen, screen
    bars = [int(n) for n in re.findall(rf"(\d+)/{ROWS}", screen)]
    confirmed = int(re.search(r"confirmed\s+(\d+)", screen).group(1))  # type: ignore[union-attr]
    not_sent = int(re.search(r"not sent\s+(\d+)", screen).group(1))  # type: ignore[union-attr]
    assert not_sent > 0, screen
    assert bars[-1] == confirmed < ROWS, screen  # the bar ends at what was done
    line = re.search(r"(\d+) requests for (\d+) rows in ([\d.]+) s \((\d+) rows/s\)", screen)
    assert line is not None, screen
    sent, seconds, rate = int(line.group(2)), float(line.group(3)), int(line.group(4))
    assert sent == confirmed, screen
    assert abs(rate - sent / seconds) <= max(2, 0.1 * rate), screen

    # resumed: the rows done before are not in the rate
    resumed = json.loads(sb.run("-o", "json", "capture", "--batch",
                                str(root / "rows.csv")).stdout)
    assert resumed["earlier_run"] == confirmed
    fresh = ROWS - confirmed
    assert resumed["rows_per_s"] == pytest.approx(fresh / resumed["elapsed_s"], rel=0.05)
    assert resumed["rows_per_s"] < ROWS / resumed["elapsed_s"]
