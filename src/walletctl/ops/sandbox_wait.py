"""Waiting for a sandbox to accept requests (``walletctl sandbox wait``, the pytest plugin).

Polls ``GET <url>/_sandbox/health`` until it answers ``{"status": "ok"}``, backing off from
50 ms to 500 ms between attempts, and gives up after ``timeout`` seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from walletctl.client.admin import HEALTH, SandboxAdmin, SandboxUnreachable, serve_command
from walletctl.errors import NetworkError


class SandboxNotReady(NetworkError):
    """The sandbox did not answer its health route in time (exit code 7)."""


@dataclass(frozen=True)
class Ready:
    url: str
    waited: float  # seconds
    attempts: int
    version: str
    amount_format: str


def wait_ready(url: str, *, timeout: float = 30.0) -> Ready:
    """Return once ``url`` is a ready sandbox; raise :class:`SandboxNotReady` after
    ``timeout`` seconds (the message names the last thing that went wrong)."""
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise SandboxNotReady(f"URL: must start with http:// or https://, not {url!r}")
    start = time.monotonic()
    deadline = start + timeout
    pause, attempts, last = 0.05, 0, "no answer yet"
    with SandboxAdmin(base) as admin:
        while True:
            attempts += 1
            left = deadline - time.monotonic()
            try:
                resp = admin.send("GET", HEALTH, timeout=max(0.1, min(2.0, left)))
                data = resp.json() if resp.status_code == 200 else None
                if isinstance(data, dict) and data.get("status") == "ok":
                    return Ready(base, time.monotonic() - start, attempts,
                                 str(data.get("version", "")), str(data.get("amountFormat", "")))
                last = f"{HEALTH} answered HTTP {resp.status_code}"
            except SandboxUnreachable as exc:
                last = exc.cause
            except ValueError:
                last = f"{HEALTH} did not answer JSON"
            if time.monotonic() + pause > deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    raise SandboxNotReady(
        f"the sandbox at {base} was not ready after {timeout:g} s "
        f"({attempts} attempts; last: {last})",
        hint=f"start it with {serve_command(base, '--ready-file', 'PATH')}, or raise --timeout")
