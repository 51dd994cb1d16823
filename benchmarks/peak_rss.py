"""Run a command and write its peak RSS (KiB) and CPU seconds to a file, as JSON.

    python benchmarks/peak_rss.py OUT.json CMD [ARG...]

Why a launcher: a child started straight from the benchmark process inherits the
benchmark's memory high-water mark. Linux carries the peak RSS of the address space an
``execve`` replaces into the new program's ``ru_maxrss``, and Python's subprocess forks (or
vforks) the benchmark, which here hosts a sandbox: every walletctl child then "peaked" at
the benchmark's size (118.5 MiB for both 10k and 100k rows). Started from this small
process instead, the carried-over mark is this launcher's (~10 MiB), below any walletctl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> int:
    out, cmd = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(cmd)  # stdin/stdout/stderr are this launcher's
    _, status, usage = os.wait4(proc.pid, 0)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"maxrss_kib": usage.ru_maxrss, "cpu_s": usage.ru_utime + usage.ru_stime}, fh)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    raise SystemExit(main())
