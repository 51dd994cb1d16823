"""Peak memory of a real-port sandbox server fed 200 MB request bodies.

Starts ``walletctl sandbox serve`` in a subprocess, records its resident set (``VmRSS``)
after start-up, then sends 200 MB bodies over raw sockets to several routes, both with a
``Content-Length`` and chunked (no length: the server must count while reading), and reads
the process's peak resident set (``VmHWM``, Linux). Prints the answers and the ratio
peak / baseline; fails (exit 1) when the peak grows by more than ``--max-growth-mb``.

    python benchmarks/sandbox_memory.py [--mb 200] [--max-growth-mb 64]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROUTES = ("/api/v5/checkout", "/api/v5/paymentAccounts", "/_sandbox/faults",
          "/demo/merchant/api/result")
CHUNK = b"x" * (1 << 20)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _send(port: int, path: str, megabytes: int, chunked: bool) -> str:
    """Send a ``megabytes`` body; return the status line (or how the server cut us off)."""
    total = megabytes * len(CHUNK)
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json", "Authorization: PublicApiKey sandbox-api-key"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sent = 0
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        while sent < total:
            data = CHUNK
            if chunked:
                data = f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n"
            sock.sendall(data)
            sent += len(CHUNK)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered and closed while we were still sending: expected
    try:
        answer = sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]
    except OSError as exc:
        answer = f"(connection {type(exc).__name__})"
    finally:
        sock.close()
    return f"{answer or '(closed)'} after {sent >> 20} MB sent"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--max-growth-mb", type=int, default=64)
    args = parser.parse_args()
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        proc.stdout.readline()  # ready line
        _send(port, "/api/v5/checkout", 1, chunked=False)  # warm the route up
        time.sleep(0.2)
        base = _status_kb(proc.pid, "VmRSS")
        print(f"baseline RSS after start-up: {base / 1024:.1f} MB")
        for path in ROUTES:
            for chunked in (False, True):
                kind = "chunked" if chunked else "Content-Length"
                print(f"  {args.mb} MB {kind:14} {path:28} -> "
                      f"{_send(port, path, args.mb, chunked)}")
        peak = _status_kb(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    growth = (peak - base) / 1024
    print(f"peak RSS: {peak / 1024:.1f} MB (growth {growth:.1f} MB, "
          f"peak/baseline {peak / base:.2f}x, body/peak {args.mb * 1024 / peak:.1f}x)")
    return 0 if growth <= args.max_growth_mb else 1


if __name__ == "__main__":
    sys.exit(main())
