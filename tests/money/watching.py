"""``walletctl approvals --watch`` as a real process (Ctrl-C is the point): its lines read
as they come, each with the moment it arrived."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

from .conftest import WALLETCTL

INTERRUPTED = 130


class Watcher:
    """``walletctl [ARGV] approvals --watch`` running with ``env``."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([*WALLETCTL, *argv, "approvals", "--watch"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=env)
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))

    def _read_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line)

    def ready(self, timeout: float = 60) -> None:
        """Until it says it is watching (its history is open and listened to)."""
        deadline = time.monotonic() + timeout
        while not any("watching" in e for e in self.errors):
            assert self.proc.poll() is None, f"exit {self.proc.returncode}: {self.errors}"
            assert time.monotonic() < deadline, self.errors
            time.sleep(0.05)

    def next_line(self, timeout: float = 30) -> tuple[float, str]:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s; stderr: {self.errors}") from None

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
