"""Memory of a real-port sandbox server: 200 MB request bodies, and many connections
holding partial bodies.

Starts ``walletctl sandbox serve`` in a subprocess, records its resident set (``VmRSS``)
after start-up, then sends 200 MB bodies over raw sockets to several routes, both with a
``Content-Length`` and chunked (no length: the server must count while reading), and reads
the process's peak resident set (``VmHWM``, Linux). Prints the answers and the ratio
peak / baseline; fails (exit 1) when the peak grows by more than ``--max-growth-mb``.

    python benchmarks/sandbox_memory.py [--mb 200] [--max-growth-mb 64]

``--connections N`` instead: N connections (default of the flag: 1,000) each send a request
head announcing a 900 KB body (half with ``Content-Length``, half chunked) and part of it
(``--partial-kb``, default 200), then stall. Prints the resident set before, while they hold
their partial bodies, and after they have closed, and the answers they got (the body budget
answers 503 to what does not fit); fails (exit 1) when the growth while they hold passes
``--max-growth-mb`` (default 150 in this mode) or more than a quarter of it stays after.

    python benchmarks/sandbox_memory.py --connections 1000 [--partial-kb 200]

``--ledger-readers N``: seeds ``--ledger-rows`` transactions (default 50,000), then N clients
ask for ``GET /_sandbox/ledger`` and read 4 KB of it every second; ``--half-headers N``: N
connections each send 60 KB of a request head and stall. Both print the resident set before,
while they hold, and after they have gone, and a normal client's worst latency meanwhile;
the ledger mode fails (exit 1) when more than 40 MB stays after its readers have gone.

    python benchmarks/sandbox_memory.py --ledger-readers 500
    python benchmarks/sandbox_memory.py --half-headers 4000
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import resource
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


def _partial(port: int, n: int, partial: int) -> socket.socket:
    """A connection that announced a 900 KB body and sent ``partial`` bytes of it."""
    head = ["POST /api/v5/checkout HTTP/1.1", f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json", "Authorization: PublicApiKey sandbox-api-key"]
    body = b"x" * partial
    if n % 2:
        head.append("Transfer-Encoding: chunked")
        body = f"{partial:x}\r\n".encode() + body + b"\r\n"
    else:
        head.append(f"Content-Length: {900 * 1024}")
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setblocking(False)
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    deadline = time.monotonic() + 2
    while data and time.monotonic() < deadline:
        try:
            data = data[sock.send(data):]
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            break  # answered (503) and closed
    return sock


def _status_of(sock: socket.socket) -> str:
    try:
        data = sock.recv(4096)
    except BlockingIOError:
        return "(holding)"
    except OSError as exc:
        return f"({type(exc).__name__})"
    return data.split(b"\r\n", 1)[0].decode("latin-1") or "(closed)"


def partial_bodies(port: int, pid: int, connections: int, partial_kb: int,
                   max_growth_mb: int) -> int:
    _send(port, "/api/v5/checkout", 1, chunked=False)  # warm the route up
    time.sleep(0.3)
    before = _status_kb(pid, "VmRSS")
    socks = [_partial(port, n, partial_kb * 1024) for n in range(connections)]
    time.sleep(1.0)  # the server reads what was sent
    during = _status_kb(pid, "VmRSS")
    answers = collections.Counter(_status_of(s) for s in socks)
    for sock in socks:
        sock.close()
    time.sleep(2.0)
    after = _status_kb(pid, "VmRSS")
    print(f"{connections} connections, {partial_kb} KB of a 900 KB body each:")
    for answer, count in answers.most_common():
        print(f"  {count:5} {answer}")
    growth, kept = (during - before) / 1024, (after - before) / 1024
    print(f"RSS before {before / 1024:.1f} MB, while holding {during / 1024:.1f} MB "
          f"(+{growth:.1f} MB), after close {after / 1024:.1f} MB (+{kept:.1f} MB)")
    return 0 if growth <= max_growth_mb and kept <= max_growth_mb / 4 else 1


def _worst_latency(port: int, seconds: float) -> float:
    """A normal client's worst latency over ``seconds`` (health and the faults route)."""
    worst = 0.0
    end = time.monotonic() + seconds
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        while time.monotonic() < end:
            start = time.perf_counter()
            sock.sendall(f"GET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1:{port}"
                         "\r\n\r\n".encode())
            data = b""
            while b"}" not in data:
                data += sock.recv(4096)
            worst = max(worst, time.perf_counter() - start)
            time.sleep(0.02)
    return worst


def _seed(port: int, rows: int) -> None:
    import json
    for start in range(0, rows, 10_000):
        body = json.dumps({"merchantId": "M-MEM", "storeId": "S-1", "currency": "EUR",
                           "kind": "sale", "transactions": [
                               {"reference": f"MEM-{i}", "amount": "10.00"}
                               for i in range(start, min(rows, start + 10_000))]}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            sock.sendall(f"POST /_sandbox/seed HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {len(body)}"
                         "\r\nConnection: close\r\n\r\n".encode() + body)
            answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


LEDGER_KEPT_MB = 40  # growth that may stay after the ledger's readers have gone (measured +20)


def ledger_readers(port: int, pid: int, readers: int, rows: int) -> int:
    _seed(port, rows)
    time.sleep(0.5)
    before = _status_kb(pid, "VmRSS")
    socks = []
    for _ in range(readers):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(f"GET /_sandbox/ledger HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                     .encode())
        socks.append(sock)
    worst = 0.0
    peak = before
    for _ in range(5):  # read 4 KB a second each, five seconds
        for sock in socks:
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.recv(4096)
        worst = max(worst, _worst_latency(port, 1.0))
        peak = max(peak, _status_kb(pid, "VmRSS"))
    for sock in socks:
        sock.close()
    time.sleep(3.0)
    after = _status_kb(pid, "VmRSS")
    print(f"{readers} slow readers of a {rows:,}-transaction ledger: RSS before "
          f"{before / 1024:.1f} MB, while reading {peak / 1024:.1f} MB "
          f"(+{(peak - before) / 1024:.1f} MB), after {after / 1024:.1f} MB "
          f"(+{(after - before) / 1024:.1f} MB); a normal client's worst latency "
          f"{worst * 1000:.0f} ms")
    if after - before > LEDGER_KEPT_MB * 1024:  # was +50 MB, kept until a full GC pass
        print(f"FAIL: more than {LEDGER_KEPT_MB} MB stayed after the readers went")
        return 1
    return 0


def half_headers(port: int, pid: int, connections: int) -> int:
    before = _status_kb(pid, "VmRSS")
    head = (f"GET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
            + b"".join(b"X-Pad-%05d: %s\r\n" % (i, b"p" * 1000) for i in range(60)))
    socks = []
    for _ in range(connections):
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        socks.append(sock)
    time.sleep(0.5)
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.send(head)
    worst = _worst_latency(port, 2.0)
    during = _status_kb(pid, "VmRSS")
    answers = collections.Counter(_status_of(s) for s in socks)
    for sock in socks:
        sock.close()
    time.sleep(3.0)
    after = _status_kb(pid, "VmRSS")
    print(f"{connections} connections holding 60 KB of headers:")
    for answer, count in answers.most_common():
        print(f"  {count:5} {answer}")
    print(f"RSS before {before / 1024:.1f} MB, while holding {during / 1024:.1f} MB "
          f"(+{(during - before) / 1024:.1f} MB), after close {after / 1024:.1f} MB "
          f"(+{(after - before) / 1024:.1f} MB); a normal client's worst latency "
          f"{worst * 1000:.0f} ms")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--max-growth-mb", type=int, default=None,
                        help="default 64 (bodies), 150 (--connections)")
    parser.add_argument("--connections", type=int, default=0)
    parser.add_argument("--partial-kb", type=int, default=200)
    parser.add_argument("--ledger-readers", type=int, default=0)
    parser.add_argument("--ledger-rows", type=int, default=50_000)
    parser.add_argument("--half-headers", type=int, default=0)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(args.connections, args.ledger_readers, args.half_headers)
    if wanted and soft != resource.RLIM_INFINITY and soft < wanted + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * wanted), hard))
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if args.ledger_readers or args.half_headers:
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().rsplit(":", 1)[1])
            proc.stdout.readline()  # ready line
            if args.ledger_readers:
                return ledger_readers(port, proc.pid, args.ledger_readers, args.ledger_rows)
            return half_headers(port, proc.pid, args.half_headers)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    if args.connections:
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().rsplit(":", 1)[1])
            proc.stdout.readline()  # ready line
            return partial_bodies(port, proc.pid, args.connections, args.partial_kb,
                                  args.max_growth_mb or 150)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    max_growth = args.max_growth_mb or 64
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
    return 0 if growth <= max_growth else 1


if __name__ == "__main__":
    sys.exit(main())
