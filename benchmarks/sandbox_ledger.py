"""The sandbox's ledger at scale: `walletctl sandbox ledger` over N transactions while
another client asks `/_sandbox/health` every 20 ms.

    python benchmarks/sandbox_ledger.py [--size 1000000] [--format ndjson]

Writes N approved sales into a sandbox database file (through the store's connection, in
one statement: what is measured is the reading), serves it with ``walletctl sandbox serve
--db`` in its own process, then runs ``walletctl -o FORMAT sandbox ledger`` (its output
counted and dropped) while a second client sends health requests one after another. Prints
the ledger's time and rate, the command's first-byte time and peak RSS, the server's peak
RSS (``VmHWM``), and the health requests' count, median, p99 and worst latency, first for
five seconds with no read (what a busy machine alone adds), then during the read, with the
load average. Exits 1 when a health request during the read took 100 ms or more (the
target), or the ledger is short.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

TARGET_S = 0.100
IDLE_S = 5.0
LAUNCHER = ("import os, subprocess, sys\n"
            "child = subprocess.Popen(sys.argv[1:])\n"
            "_, status, usage = os.wait4(child.pid, 0)\n"
            "sys.stderr.write(f'peak-rss-kib {usage.ru_maxrss}\\n')\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def build(path: Path, size: int) -> None:
    from walletctl.sandbox.store import Store

    store = Store(str(path))
    stamp = "2026-01-01T00:00:00+00:00"
    with store.atomic() as db:
        db.executemany(
            "INSERT INTO transactions (id, merchant_id, store_id, reference, kind, type_str, "
            "amount, currency, state, method, created_at, updated_at) VALUES (?, 'M-1', "
            "'S-1', ?, 'sale', 'ecom.sale', '10.00', 'EUR', 'Approved', 'WalletV2', ?, ?)",
            ((f"id-{i:08d}", f"LEDGER-{i:08d}", stamp, stamp) for i in range(size)))
    store.close()


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--format", default="ndjson", choices=("json", "ndjson", "csv"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="walletctl-ledger-bench-") as scratch:
        db = Path(scratch) / "sandbox.sqlite3"
        started = time.monotonic()
        build(db, args.size)
        print(f"built {args.size} transactions in {time.monotonic() - started:.1f} s")
        server = subprocess.Popen(
            [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q",
             "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            return _measure(args, server)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _measure(args: argparse.Namespace, server: subprocess.Popen[str]) -> int:
    assert server.stdout is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline().rsplit(':', 1)[1])}"
    server.stdout.readline()  # the ready line
    latencies: list[float] = []
    done = threading.Event()

    def ask_health(into: list[float]) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            client.get("/_sandbox/health")
            while not done.is_set():
                sent = time.monotonic()
                client.get("/_sandbox/health").raise_for_status()
                into.append(time.monotonic() - sent)
                time.sleep(0.02)

    idle: list[float] = []  # the same requests with no ledger read: what the machine adds
    asker = threading.Thread(target=ask_health, args=(idle,))
    asker.start()
    time.sleep(IDLE_S)
    done.set()
    asker.join()
    done.clear()
    started_load = os.getloadavg()[0]
    base_rss = _kib(server.pid, "VmRSS")
    asker = threading.Thread(target=ask_health, args=(latencies,))
    asker.start()
    started = time.monotonic()
    cli = subprocess.Popen([sys.executable, "-c", LAUNCHER, sys.executable, "-m", "walletctl",
                            "-o", args.format, "sandbox", "ledger", "--url", url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert cli.stdout is not None
    assert cli.stderr is not None
    first = cli.stdout.read(1)
    first_byte = time.monotonic() - started
    lines = first.count(b"\n")
    while chunk := cli.stdout.read(1 << 20):
        lines += chunk.count(b"\n")
    stderr = cli.stderr.read().decode()
    code = cli.wait()
    seconds = time.monotonic() - started
    done.set()
    asker.join()
    if code != 0:
        print(stderr, file=sys.stderr)
        return 1
    cli_rss = int(stderr.split("peak-rss-kib ")[1]) / 1024
    server_peak = _kib(server.pid, "VmHWM") / 1024
    load = os.getloadavg()[0]
    print(f"sandbox ledger -o {args.format}, {args.size} transactions: {seconds:.1f} s "
          f"({args.size / seconds:,.0f} transactions/s), first byte {first_byte:.2f} s, "
          f"{lines} lines; command peak RSS {cli_rss:.1f} MiB")
    print(f"server: RSS {base_rss / 1024:.1f} MiB before, peak {server_peak:.1f} MiB")
    print(f"health ({IDLE_S:.0f} s with no read first, then during the read; load average "
          f"{started_load:.1f} at the start, {load:.1f} at the end):")
    for name, sample in (("idle", idle), ("during the read", latencies)):
        ordered = sorted(sample)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(f"  {name:<16} {len(ordered)} requests, median "
              f"{statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, worst "
              f"{ordered[-1] * 1000:.1f} ms (target < {TARGET_S * 1000:.0f} ms)")
    expected = args.size + (1 if args.format == "csv" else 0)
    short = args.format != "json" and lines < expected
    return 1 if max(latencies) >= TARGET_S or short else 0


if __name__ == "__main__":
    sys.exit(main())
