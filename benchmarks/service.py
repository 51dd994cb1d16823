"""``walletctl sandbox serve`` as a CI service: time to ready and time to stop on SIGTERM.

Starts the sandbox N times (``--port 0 --ready-file``), measures from spawn to the ready file,
then from SIGTERM to process exit, and prints medians. The target is a stop within a second;
start-up is reported beside ``python -c pass`` so the ratio survives a noisy machine.

    python benchmarks/service.py [--runs 5]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(tmp: Path) -> tuple[float, float]:
    ready = tmp / "url"
    ready.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", "sandbox", "serve", "--port",
                             "0", "--quiet", "--ready-file", str(ready)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}")
        time.sleep(0.005)
    up = time.perf_counter() - start
    stop_start = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    return up, time.perf_counter() - stop_start


def python_pass() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ups, stops, bare = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            bare.append(python_pass())
            up, stop = one_run(Path(tmp))
            ups.append(up)
            stops.append(stop)
    up, stop, base = (statistics.median(x) for x in (ups, stops, bare))
    print(f"ready after  {up * 1000:7.0f} ms (median of {args.runs}; "
          f"{up / base:.1f}x python -c pass = {base * 1000:.0f} ms)")
    print(f"SIGTERM stop {stop * 1000:7.0f} ms (median; max {max(stops) * 1000:.0f} ms; "
          f"target < 1000 ms)")


if __name__ == "__main__":
    main()
