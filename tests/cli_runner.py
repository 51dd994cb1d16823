"""walletctl run IN-PROCESS, the way a test would start it as a process.

:func:`run_walletctl` runs the app's own entry point (``walletctl.cli.main:app``, the group
``python -m walletctl`` runs) with the given arguments, stdin, environment and working directory,
and returns a :class:`subprocess.CompletedProcess` (``returncode``, ``stdout``, ``stderr``), so a
test written against ``subprocess.run([sys.executable, "-m", "walletctl", ...])`` changes one
call. Starting ``walletctl`` as a process costs about half a second of CPU (the interpreter and
~400 modules); in-process it costs the command's own work.

What a fresh process would have, restored afterwards:

* ``os.environ`` is exactly ``env`` when one is given (a process's environment is the dict it
  was started with, not an overlay), and ``sys.argv`` is ``walletctl ARGS`` (``--debug`` is
  read from it);
* stdin, stdout and stderr are pipes (not terminals): ``input`` or an empty stdin;
* the swappable :data:`walletctl.cli.state.ENV` (transport, tty answers) is at its defaults;
* the real-time interval timer, which walletctl's answer deadline (SIGALRM) re-arms, is given
  back to pytest-timeout with the time it had left.

Keep a real process where the process is the point: signals, kills, terminals, a closed pipe,
two processes at once, the console script itself (:data:`WALLETCTL`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

WALLETCTL = [sys.executable, "-m", "walletctl"]


@contextlib.contextmanager
def _timer_kept() -> Iterator[None]:
    """pytest-timeout's SIGALRM timer (if any) survives walletctl's own use of the timer."""
    if not hasattr(signal, "setitimer"):
        yield
        return
    handler = signal.getsignal(signal.SIGALRM)
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    start = time.monotonic()
    try:
        yield
    finally:
        if left:
            signal.signal(signal.SIGALRM, handler)
            remaining = max(left - (time.monotonic() - start), 0.001)
            signal.setitimer(signal.ITIMER_REAL, remaining, interval)


def run_walletctl(args: list[str] | tuple[str, ...], *, input: str | bytes | None = None,
                  env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                  ) -> subprocess.CompletedProcess[str]:
    """``walletctl ARGS`` in this process; ``env`` (when given) replaces the environment."""
    from click.testing import CliRunner

    from walletctl.cli.main import app
    from walletctl.cli.state import ENV

    argv = [str(a) for a in args]
    overlay: dict[str, str | None] = {}
    if env is not None:
        overlay = {name: None for name in os.environ if name not in env}
        overlay.update(env)
    saved_env = (ENV.transport, ENV.stdin_isatty, ENV.stdout_isatty)
    saved_argv = sys.argv
    ENV.transport, ENV.stdin_isatty, ENV.stdout_isatty = None, None, None
    sys.argv = ["walletctl", *argv]
    runner = CliRunner()
    try:
        with _timer_kept(), contextlib.chdir(cwd or os.getcwd()):
            result = runner.invoke(app, argv, input=input, env=overlay,
                                   prog_name="walletctl", catch_exceptions=False)
    finally:
        sys.argv = saved_argv
        ENV.transport, ENV.stdin_isatty, ENV.stdout_isatty = saved_env
    return subprocess.CompletedProcess(["walletctl", *argv], result.exit_code,
                                       result.stdout, result.stderr)
