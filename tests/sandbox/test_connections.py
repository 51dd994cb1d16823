"""Hostile connections against a real ``walletctl sandbox serve`` subprocess, over raw
sockets: huge headers, idle and half-sent requests, more sockets than descriptors, and
malformed HTTP. The server stays available and answers in the gateway error shape."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from timescale import scaled
from walletctl.models.sandbox_values import DEFAULT_REQUEST_TIMEOUT
from walletctl.sandbox.config import MAX_HEADER_BYTES, SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

SHAPE = {"code", "description", "details"}


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)


def _nofile(limit: int) -> Callable[[], None]:
    def apply() -> None:
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(limit, hard)))
    return apply


@contextlib.contextmanager
def serve(*args: str, nofile: int | None = None) -> Iterator[Served]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=_nofile(nofile) if nofile else None,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" on ", 1)[1].strip()
        assert proc.stdout.readline().startswith("walletctl sandbox ready")
        yield Served(proc, url)
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=15)
        assert "Traceback" not in err, err


def read_answer(sock: socket.socket, limit: float = 10.0) -> bytes:
    """Everything the server sends until it closes (or a reset), within ``limit`` seconds."""
    sock.settimeout(limit)
    chunks = []
    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def error_of(answer: bytes, status: int) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer[:300]
    assert b"content-type: application/json" in head.lower()
    data = json.loads(body)
    assert set(data) == SHAPE, data
    message: str = data["details"]["message"]
    return message


@pytest.fixture(scope="module")
def quick() -> Iterator[Served]:
    """A sandbox that gives a client 1 second to send a complete request."""
    with serve("--request-timeout", "1") as served:
        yield served


def test_a_30_mb_header_is_refused_while_others_are_answered(quick: Served) -> None:
    sock = quick.connect()
    sent = threading.Event()
    outcome: dict[str, bytes] = {}

    def hostile() -> None:
        line = b"GET /_sandbox/health HTTP/1.1\r\nHost: localhost\r\nX-Big: "
        chunk = b"a" * (1024 * 1024)
        with contextlib.suppress(OSError):
            sock.sendall(line)
            for _ in range(30):
                sock.sendall(chunk)
                sent.set()
            sock.sendall(b"\r\n\r\n")
        outcome["answer"] = read_answer(sock)

    thread = threading.Thread(target=hostile)
    thread.start()
    assert sent.wait(10)
    started = time.monotonic()
    health = httpx.get(quick.url + "/_sandbox/health", timeout=5)
    elapsed = time.monotonic() - started
    thread.join(30)
    sock.close()
    assert health.status_code == 200
    assert elapsed < scaled(1.0), f"a health check took {elapsed:.2f} s next to a 30 MB header"
    answer = outcome["answer"]
    if answer:  # else the connection was closed (allowed), never a 200
        assert "larger than 65536 bytes" in error_of(answer, 431)


def test_a_header_just_under_the_limit_is_served(quick: Served) -> None:
    resp = httpx.get(quick.url + "/_sandbox/health",
                     headers={"x-pad": "a" * (MAX_HEADER_BYTES - 1024)})
    assert resp.status_code == 200


def test_an_idle_connection_is_closed_within_the_timeout(quick: Served) -> None:
    with quick.connect() as sock:
        started = time.monotonic()
        assert read_answer(sock) == b""  # closed, nothing said: nothing was asked
        assert time.monotonic() - started < scaled(5)


def test_a_half_sent_request_is_answered_408_and_closed(quick: Served) -> None:
    with quick.connect() as sock:
        sock.sendall(b"GET /_sandbox/health HTTP/1.1\r\nHost: local")
        started = time.monotonic()
        message = error_of(read_answer(sock), 408)
        assert time.monotonic() - started < scaled(5)
    assert message == "(request): not received within 1 s (--request-timeout)"


def test_a_stalled_body_is_closed_within_the_timeout(quick: Served) -> None:
    with quick.connect() as sock:
        sock.sendall(b"POST /api/v5/checkout HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
        started = time.monotonic()
        read_answer(sock)
        assert time.monotonic() - started < scaled(5)


def test_keep_alive_serves_several_requests_then_closes(quick: Served) -> None:
    with quick.connect() as sock:
        for _ in range(3):
            sock.sendall(b"GET /_sandbox/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = b""
            while b'"status":"ok"' not in answer:
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
            time.sleep(0.4)  # the deadline restarts with each answer
        assert read_answer(sock) == b""


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: localhost\r\n\r\n",
    b"GET /_sandbox/health HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n",
    b"POST /api/v5/checkout HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Type: application/json\r\n\r\nzz\r\n",
])
def test_malformed_http_is_a_400_in_the_error_shape(quick: Served, raw: bytes) -> None:
    with quick.connect() as sock:
        sock.sendall(raw)
        assert error_of(read_answer(sock), 400) == "(request): malformed HTTP request"


def test_the_h11_stack_has_the_same_limits() -> None:
    config = SandboxConfig(quiet=True, request_timeout=1)
    with EmbeddedSandbox(config, stack=("asyncio", "h11")) as sb:
        def exchange(raw: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", sb.port), timeout=10) as sock:
                with contextlib.suppress(OSError):
                    sock.sendall(raw)
                return read_answer(sock)

        assert "larger than 65536" in error_of(exchange(
            b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 2_000_000), 431)
        assert "within 1 s" in error_of(exchange(b"GET / HTTP/1.1\r\nHost: loc"), 408)
        assert "malformed" in error_of(exchange(b"GARBAGE\r\n\r\n"), 400)
        assert exchange(b"") == b""  # idle: closed
        assert httpx.head(sb.url + "/_sandbox/health").status_code == 200


def test_max_connections_caps_open_connections() -> None:
    with serve("--max-connections", "2") as served:
        first, second = served.connect(), served.connect()
        try:
            resp = httpx.get(served.url + "/_sandbox/health", timeout=5)
            assert resp.status_code == 503
            assert resp.json()["details"]["message"].startswith(
                "(connection): the sandbox has 2 open connections")
        finally:
            first.close()
            second.close()


def test_the_default_request_timeout_is_at_most_30_seconds() -> None:
    assert 0 < SandboxConfig().request_timeout == DEFAULT_REQUEST_TIMEOUT <= 30
    help_text = subprocess.run(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--help"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert "--request-timeout SECONDS" in help_text
    assert f"[default: {DEFAULT_REQUEST_TIMEOUT}]" in help_text


def test_more_sockets_than_descriptors_leave_new_clients_answered() -> None:
    need = 1_300
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"this test needs {need} descriptors; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    idle: list[socket.socket] = []
    try:
        with serve(nofile=1024) as served:
            for _ in range(1_100):
                with contextlib.suppress(OSError):
                    idle.append(served.connect())
            started = time.monotonic()
            try:
                resp = httpx.get(served.url + "/_sandbox/health", timeout=5)
            finally:
                elapsed = time.monotonic() - started
            print(f"new client: {resp.status_code} after {elapsed:.3f} s")
            assert resp.status_code in (200, 503), resp.text
            assert elapsed < scaled(2.0), f"a new client waited {elapsed:.2f} s"
            if resp.status_code == 503:
                assert set(resp.json()) == SHAPE
                assert "open connections" in resp.json()["details"]["message"]
            for sock in idle:
                sock.close()
            idle.clear()
            deadline = time.monotonic() + 5  # the server sees the closes within moments
            while (status := httpx.get(served.url + "/_sandbox/health",
                                       timeout=5).status_code) != 200:
                assert status == 503
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        for sock in idle:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
