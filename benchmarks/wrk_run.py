"""One way to run ``wrk`` for every benchmark here: requests/s of successful answers only.

A wrk rate counts every answer, errors included: a run whose requests come back 409 (a
reference already used) or 4xx measures the error path, not the work. :func:`rate` reads
wrk's "Non-2xx or 3xx responses" and socket-error lines and refuses the run when more than
``max_error_share`` of its answers failed, printing wrk's output, so a ratio is never built
on error answers.
"""

from __future__ import annotations

import re
import subprocess


class WrkError(SystemExit):
    """wrk could not be read, or too many of its answers were errors."""


def rate(url: str, *, seconds: int, connections: int, threads: int = 2,
         script: str | None = None, headers: dict[str, str] | None = None,
         script_args: tuple[str, ...] = (), max_error_share: float = 0.0) -> float:
    """Requests/s of ``wrk`` on ``url``; ``script_args`` reach the Lua ``init(args)``."""
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s"]
    if script:
        cmd += ["-s", script]
    for name, value in (headers or {}).items():
        cmd += ["-H", f"{name}: {value}"]
    cmd.append(url)
    if script_args:
        cmd += ["--", *script_args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    per_s = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if per_s is None or total is None:
        raise WrkError(f"cannot read wrk's output:\n{out}")
    failed = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = int(failed.group(1)) if failed else 0
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                        out)
    if sockets:
        errors += sum(int(n) for n in sockets.groups())
    if errors > int(total.group(1)) * max_error_share:
        raise WrkError(f"wrk: {errors} of {total.group(1)} answers were errors on {url} "
                       f"(at most {max_error_share:.0%} allowed); its output:\n{out}")
    return float(per_s.group(1))
