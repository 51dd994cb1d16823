"""Bounded memory and time per connection, against a real ``walletctl sandbox serve``
subprocess over raw sockets: 1,000 connections holding partial bodies stay within the body
budget (RSS of the server before, during, after), and clients that never read their answers
lose their slots at the write deadline, so another client is answered.

The precise memory figure: ``benchmarks/sandbox_memory.py --connections 1000``."""

from __future__ import annotations

import contextlib
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from timescale import scaled
from walletctl.models.sandbox_values import DEFAULT_BODY_BUDGET

from .test_connections import Served, serve

PARTIAL = 100 * 1024
ANNOUNCED = 900 * 1024


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@contextlib.contextmanager
def descriptor_limit(wanted: int) -> Iterator[None]:
    """This process's descriptor limit raised to ``wanted`` for the duration (skipped when
    the hard limit is lower)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"needs {wanted:,} descriptors (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    with descriptor_limit(2200):
        yield


def _partial_body(port: int, n: int) -> socket.socket:
    """A checkout announcing a 900 KB body (every other one chunked) and sending 100 KB."""
    head = ["POST /api/v5/checkout HTTP/1.1", f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json", "Authorization: PublicApiKey sandbox-api-key"]
    body = b"x" * PARTIAL
    if n % 2:
        head.append("Transfer-Encoding: chunked")
        body = f"{PARTIAL:x}\r\n".encode() + body + b"\r\n"
    else:
        head.append(f"Content-Length: {ANNOUNCED}")
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setblocking(False)
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    deadline = time.monotonic() + 2
    while data and time.monotonic() < deadline:
        try:
            data = data[sock.send(data):]
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            break  # answered 503 and closed
    return sock


def _first_line(sock: socket.socket) -> bytes:
    with contextlib.suppress(BlockingIOError, OSError):
        return sock.recv(4096).split(b"\r\n", 1)[0]
    return b"(holding)"


def test_a_thousand_partial_bodies_stay_within_the_budget(many_descriptors: None) -> None:
    with serve(nofile=4096) as sb:
        assert httpx.get(sb.url + "/_sandbox/health").status_code == 200
        time.sleep(0.3)
        before = _rss_mb(sb.proc.pid)
        socks = [_partial_body(sb.port, n) for n in range(1000)]
        try:
            time.sleep(1.0)
            during = _rss_mb(sb.proc.pid)
            start = time.perf_counter()
            assert httpx.get(sb.url + "/_sandbox/health", timeout=10).status_code == 200
            health = time.perf_counter() - start
            answers = [_first_line(s) for s in socks]
        finally:
            for sock in socks:
                sock.close()
        time.sleep(1.5)
        after = _rss_mb(sb.proc.pid)
        refused = sum(a.startswith(b"HTTP/1.1 503") for a in answers)
        holding = answers.count(b"(holding)")
        print(f"\nRSS before {before:.1f} MB, holding {during:.1f} MB, after {after:.1f} MB; "
              f"{holding} holding, {refused} answered 503; health {health * 1000:.0f} ms")
        # the budget holds at most its bytes of bodies: the rest were answered 503 at once
        assert holding + refused == 1000, set(answers)
        assert holding * PARTIAL <= DEFAULT_BODY_BUDGET + 1000 * 64 * 1024
        assert refused > 0
        assert during - before < 150, (before, during)
        assert after - before < 150, (before, after)
        assert health < scaled(5.0)
        # bodies fit again once the holders are gone
        answer = httpx.post(sb.url + "/api/v5/checkout", content=b"{}", timeout=10,
                            headers={"Content-Type": "application/json",
                                     "Authorization": "PublicApiKey sandbox-api-key"})
        assert answer.status_code == 400, answer.text


def _non_reader(port: int, requests: int) -> socket.socket:
    """A client that asks for ``requests`` large answers at once (the API page's 1 MB script,
    pipelined: more than the kernel's buffers take) and never reads them."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    ask = (f"GET /docs/assets/swagger-ui-bundle.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
           "\r\n").encode()
    sock.sendall(ask * requests)
    return sock


def _free_slots(sb: Served, wanted: int) -> int:
    """How many of ``wanted`` new connections, open at once, are answered 200 (each one
    answered holds a slot while the others are asked)."""
    socks = [socket.create_connection(("127.0.0.1", sb.port), timeout=5) for _ in range(wanted)]
    try:
        for sock in socks:
            sock.sendall(f"GET /_sandbox/health HTTP/1.1\r\nHost: 127.0.0.1:{sb.port}\r\n"
                         "\r\n".encode())
        answered = 0
        for sock in socks:
            with contextlib.suppress(OSError):
                answered += sock.recv(4096).startswith(b"HTTP/1.1 200 ")
        return answered
    finally:
        for sock in socks:
            sock.close()


def _answered(sb: Served) -> int:
    try:
        return httpx.get(sb.url + "/_sandbox/health", timeout=2).status_code
    except httpx.HTTPError:
        return 0


def test_clients_that_never_read_lose_their_slots_at_the_write_deadline() -> None:
    write_timeout = 2.0
    with serve("--max-connections", "50", "--write-timeout", str(write_timeout)) as sb:
        readers = [_non_reader(sb.port, 10) for _ in range(60)]
        try:
            start = time.monotonic()
            first = status = _answered(sb)  # 503: every slot held by a client not reading
            while status != 200 and time.monotonic() - start < write_timeout + 20:
                time.sleep(0.1)
                status = _answered(sb)
            waited = time.monotonic() - start
            print(f"\nanswered {status} after {waited:.2f} s (write deadline "
                  f"{write_timeout:g} s)")
            assert first != 200, "the non-readers held no slot: nothing was measured"
            assert status == 200
            assert waited < write_timeout + 15  # generous: the machine may be loaded
            freed = _free_slots(sb, 50)
            while freed < 50 and time.monotonic() - start < write_timeout + 20:
                time.sleep(0.5)
                freed = _free_slots(sb, 50)
            print(f"slots free after {time.monotonic() - start:.2f} s: {freed} of 50")
            assert freed == 50  # every slot the non-readers held is free again
        finally:
            for sock in readers:
                sock.close()


def test_a_client_that_keeps_reading_is_not_cut_off() -> None:
    """Six 1 MB answers pipelined, more than the kernel's buffers hold, read 64 KB at a time
    every 20 ms: the server's writing pauses again and again, for longer in all than the 1 s
    write deadline, yet every byte arrives, since the client keeps reading."""
    with serve("--write-timeout", "1") as sb:
        size = len(httpx.get(sb.url + "/docs/assets/swagger-ui-bundle.js").content)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.connect(("127.0.0.1", sb.port))
        ask = (f"GET /docs/assets/swagger-ui-bundle.js HTTP/1.1\r\nHost: 127.0.0.1:{sb.port}"
               "\r\n\r\n").encode()
        sock.sendall(ask * 5 + ask.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        time.sleep(0.5)  # the server fills the buffers and pauses
        received = 0
        start = time.monotonic()
        with contextlib.closing(sock):
            sock.settimeout(10)
            while chunk := sock.recv(64 * 1024):
                received += len(chunk)
                time.sleep(0.02)
        took = time.monotonic() - start
        print(f"\nread {received} bytes in {took:.1f} s with a 1 s write deadline")
        assert received > 6 * size  # six bodies and their heads
        assert took > 1.0, "the answers fitted in the kernel's buffers: nothing was measured"
