"""Running the sandbox: :func:`serve` (foreground) and :class:`EmbeddedSandbox` (a background
thread) on a socket bound here (port 0: the real port known before serving), with bounded
connections (docs/sandbox.md, "Connections and limits")."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import json
import os
import resource
import secrets
import signal
import socket
import sys
import termios
import threading
from collections.abc import Callable, Generator
from http import HTTPStatus
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import h11
import httptools
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from walletctl.sandbox.app import create_app, store_of
from walletctl.sandbox.config import (
    HEAD_TOO_LARGE,
    MAX_HEADER_BYTES,
    SandboxConfig,
    SandboxContext,
    is_loopback,
)
from walletctl.sandbox.middleware import install_log_filter
from walletctl.sandbox.replies import error_body
from walletctl.sandbox.store import Store

LINGER = 1.0  # seconds a refused connection drains before the close
_OUTQ = getattr(termios, "TIOCOUTQ", None)  # a socket's unsent bytes (Linux: SIOCOUTQ)
READ_SIZE = 256 * 1024  # the most one socket read hands the protocol (asyncio and uvloop)
_BYTES_ACKED = 120  # offset of tcpi_bytes_acked (u64) in Linux's struct tcp_info
_TCP_INFO_SIZE = 232
_MAX_CONNECTIONS_CAP = 10_000
WRITE_BUFFER = 32 * 1024  # a connection's unsent answer bytes before its writer waits


def default_max_connections() -> int:
    """Half the soft ``RLIMIT_NOFILE``, at least 16 and at most 10 000."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS_CAP
    return max(16, min(_MAX_CONNECTIONS_CAP, soft // 2))


def error_response(status: int, message: str,
                   extra: list[tuple[bytes, bytes]] | None = None) -> bytes:
    described = "RequestTimeout" if status == 408 else None
    body = json.dumps(error_body(status, message, description=described),
                      separators=(",", ":")).encode()
    phrase = HTTPStatus(status).phrase
    lines = [f"HTTP/1.1 {status} {phrase}".encode()]
    lines += [k + b": " + v for k, v in extra or []]
    lines += [b"content-type: application/json", b"content-length: " + str(len(body)).encode(),
              b"x-content-type-options: nosniff", b"connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class _Bounded(asyncio.Protocol):
    """The limits of both protocol classes."""

    # set by protocol_class: the settings, the connection cap in force, the connections
    # answered by _refuse and still draining (at most half the cap), and the bytes of
    # incomplete request heads held across all connections (one cell: the loop's only)
    sandbox: SandboxConfig
    cap: int
    refusing: set[Any]
    heads_held: list[int]
    # provided by the uvicorn protocol class this is mixed into
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    server_state: Any
    cycle: Any
    flow: Any
    # each protocol class: whether the current request's head, its whole message, are in
    _head_in: Callable[[], bool]
    _message_in: Callable[[], bool]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the uvicorn protocol's (next in the MRO)
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._write_mark = 0  # _progress_mark() when the write deadline was armed
        self._linger: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._head_held = 0  # this connection's share of heads_held
        self._refused = False
        self._url_too_long = False  # set by the httptools protocol's on_url

    # -- the deadline ----------------------------------------------------------------------

    # -- the header budget --------------------------------------------------------------------

    def _hold_head(self, size: int) -> bool:
        """Count ``size`` bytes of an incomplete head against the budget; False when they
        do not fit."""
        if self.heads_held[0] + size > self.sandbox.header_budget:
            return False
        self.heads_held[0] += size
        self._head_held += size
        return True

    def _release_head(self) -> None:
        self.heads_held[0] -= self._head_held
        self._head_held = 0

    def _arm(self) -> None:
        self._disarm()
        self._release_head()
        self._head_bytes = 0
        self._deadline = self.loop.call_later(self.sandbox.request_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self._refused:
            return
        working = self.cycle is not None and not self.cycle.response_complete
        if working and self._message_in():
            return  # a complete request is being answered
        if self._head_in() or not self._head_bytes:
            self.transport.close()  # nothing came, or the body stalled under a running route
            return
        self._refuse(408, f"(request): not received within {self.sandbox.request_timeout:g} s "
                     "(--request-timeout)")

    # -- the write deadline -------------------------------------------------------------------

    def _unsent(self) -> int:
        """Bytes of answers not yet taken by the client: the transport's buffer plus, on
        Linux, the socket's send queue."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if _OUTQ is not None and sock is not None:
            with contextlib.suppress(OSError):
                queued = fcntl.ioctl(sock.fileno(), _OUTQ, b"\0\0\0\0")
                unsent += int.from_bytes(queued, sys.byteorder)
        return unsent

    def _acked(self) -> int | None:
        """Bytes of answers the client's TCP has acknowledged so far (Linux ``TCP_INFO``
        ``tcpi_bytes_acked``), else None. Once the client's receive buffer is full it grows
        only as the client reads, however much more the server has written meanwhile."""
        sock = self.transport.get_extra_info("socket")
        option = getattr(socket, "TCP_INFO", None)
        if sock is None or option is None:
            return None
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, option, _TCP_INFO_SIZE)
        except OSError:
            return None
        if len(info) < _BYTES_ACKED + 8:
            return None
        return int.from_bytes(info[_BYTES_ACKED:_BYTES_ACKED + 8], sys.byteorder)

    def _progress_mark(self) -> int:
        """What the write deadline compares: bytes acknowledged (growing), or where that is
        not known, minus the bytes unsent (growing as the client takes them)."""
        acked = self._acked()
        return acked if acked is not None else -self._unsent()

    def _arm_write(self) -> None:
        if self._write_deadline is None:
            self._write_mark = self._progress_mark()
            self._write_deadline = self.loop.call_later(self.sandbox.write_timeout,
                                                        self._write_expired)

    def _disarm_write(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _cycles(self) -> list[Any]:  # the requests not yet answered (running or queued)
        return [self.cycle]

    def _drop_answers(self) -> None:
        """Every route of this connection still running sees a disconnect."""
        for cycle in self._cycles():
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()

    def _write_expired(self) -> None:
        self._write_deadline = None
        unsent = self._unsent()
        if not unsent:
            return
        if self._progress_mark() > self._write_mark:  # the client took some: a new deadline
            self._arm_write()
            return
        self._drop_answers()
        self.transport.abort()  # nothing taken in time: drop the rest, free the slot

    def shutdown(self) -> None:
        """The server stops: a client not reading its answer is not waited for."""
        super().shutdown()  # type: ignore[misc]
        if self.flow.write_paused:
            self._drop_answers()
            self.transport.abort()
        elif self.transport.is_closing():
            self._drop_answers()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._arm_write()

    def resume_writing(self) -> None:
        self._disarm_write()
        super().resume_writing()

    def _after_response(self) -> None:
        """An answer is complete: what is still unsent, in our buffer or the kernel's, must be
        taken within the deadline (a deadline already running goes on: answers that the
        kernel took but the client never read count from the first of them)."""
        if not self.flow.write_paused and not self._unsent():
            self._disarm_write()
            return
        self._arm_write()

    # -- answering without the app -----------------------------------------------------------

    def _refuse(self, status: int, message: str) -> None:
        self._refused = True
        self._disarm()
        self._release_head()
        self.connections.discard(self)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the route running (if any) sees a disconnect
            cycle.message_event.set()
            if cycle.response_started:  # too late for another answer
                self.transport.close()
                return
        extra = list(getattr(self.server_state, "default_headers", []))
        if status == 503:  # the connection cap or the header budget: soon, not now
            extra.append((b"retry-after", b"1"))
        self.transport.write(error_response(status, message, extra))
        if len(self.refusing) >= max(4, self.cap // 2):
            self.transport.close()  # enough connections draining: no descriptor to spare
            return
        self.refusing.add(self)
        try:
            if self.transport.can_write_eof():
                self.transport.write_eof()
        except (OSError, RuntimeError):
            self.transport.close()
            return
        self._linger = self.loop.call_later(LINGER, self._close_refused)

    def _close_refused(self) -> None:
        """The end of the linger: an answer the client has not taken by now is dropped."""
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()

    # -- the transport's hooks (before/after uvicorn's own, next in the MRO) ------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # answers queue at most WRITE_BUFFER bytes before the route waits (a streamed
        # ledger): a slow reader holds little (docs/sandbox.md, "Connections and limits")
        self.transport.set_write_buffer_limits(high=WRITE_BUFFER)
        if len(self.connections) > self.cap:
            self._refuse(503, f"(connection): the sandbox has {self.cap} "
                         "open connections, its limit; try again shortly")
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.refusing.discard(self)
        self._disarm()
        self._release_head()
        self._disarm_write()
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # draining before the close
        if not self._head_in() and not self._hold_head(len(data)):
            self._refuse(503, f"(request): the sandbox holds {self.sandbox.header_budget} "
                         "bytes of incomplete request heads at once, across all connections, "
                         "and this one does not fit now; try again shortly")
            return
        super().data_received(data)
        if self._refused or self.transport.is_closing():
            return
        if self._message_in():
            self._disarm()
            self._release_head()
        elif not self._head_in():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEADER_BYTES:
                self._refuse(431, HEAD_TOO_LARGE)
        else:
            self._release_head()  # the head is in: the app holds it from here

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            return
        if self._url_too_long:
            self._refuse(431, HEAD_TOO_LARGE)
            return
        self._refuse(400, "(request): malformed HTTP request")


class SandboxHttpToolsProtocol(_Bounded, HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_done = False
        self._message_done = False
        self._running: Any = None  # the request whose route runs (others queue, pipelined)

    def _head_in(self) -> bool:
        return self._head_done

    def _message_in(self) -> bool:
        return self._message_done

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        self._running = cycle
        super()._start_asgi_task(cycle, app)

    def _cycles(self) -> list[Any]:
        return [self._running, self.cycle, *(cycle for cycle, _app in self.pipeline)]

    def on_message_begin(self) -> None:
        self._head_done = self._message_done = False
        self._url_too_long = False
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_HEADER_BYTES:
            # httptools cannot parse a URL over 64 KiB (its offsets are 16-bit): a 431, not
            # "malformed" (the parser error this raises is answered by send_400_response)
            self._url_too_long = True
            raise httptools.HttpParserError("request target too long")

    def on_headers_complete(self) -> None:
        self._head_done = True
        scheme, sep, rest = self.url.partition(b"://")
        if sep and scheme.lower() in (b"http", b"https"):
            # an absolute-form target names the host (RFC 9112 3.2.2: the Host header is
            # ignored then): the guard checks that name, not the header's
            authority = rest.split(b"/", 1)[0].split(b"?", 1)[0].rpartition(b"@")[2]
            self.headers[:] = [(k, v) for k, v in self.headers if k != b"host"]
            self.headers.append((b"host", authority))
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._message_done = True
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._after_response()
        if not self.transport.is_closing() and not self.pipeline:
            self._head_done = self._message_done = False
            self._arm()


class SandboxH11Protocol(_Bounded, H11Protocol):
    def _head_in(self) -> bool:
        return self.conn.their_state is not h11.IDLE

    def _message_in(self) -> bool:
        return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._after_response()
        if not self.transport.is_closing() and not self._message_in():
            self._arm()


def protocol_class(http_name: str, config: SandboxConfig) -> type[asyncio.Protocol]:
    """The bounded protocol class of one server (``config``'s limits)."""
    base = SandboxHttpToolsProtocol if http_name == "httptools" else SandboxH11Protocol
    fd_cap = default_max_connections()
    cap = min(config.max_connections, fd_cap) if config.max_connections else fd_cap
    return type(base.__name__, (base,), {"sandbox": config, "cap": cap, "refusing": set(),
                                         "heads_held": [0]})


def _stack() -> tuple[str, str]:
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return loop, http


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _Server(uvicorn.Server):
    """uvicorn.Server on the bounded protocols that reports readiness and exits quietly on
    SIGINT/SIGTERM; ``logs``: on stderr (``config.quiet``: warnings only), else none."""

    def __init__(self, app: FastAPI, config: SandboxConfig, port: int, *, logs: bool = False,
                 stack: tuple[str, str] | None = None,
                 on_ready: Callable[[], None] | None = None) -> None:
        loop, http = stack or _stack()
        quiet = config.quiet or not logs
        install_log_filter()
        to_stderr = {"handlers": ["stderr"], "level": "WARNING" if quiet else "INFO",
                     "propagate": False}  # stdout carries only the URL and ready lines
        log_config = {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(message)s"}},
            "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                                    "stream": "ext://sys.stderr"}},
            "loggers": {"uvicorn.error": to_stderr, "uvicorn.access": to_stderr},
        }
        super().__init__(uvicorn.Config(
            app,
            host=config.host,
            port=port,
            loop=loop,
            http=protocol_class(http, config),  # bounded connections
            # h11's own limit, above ours so that ours (431, not 400) is met first
            h11_max_incomplete_event_size=MAX_HEADER_BYTES + READ_SIZE + 1,
            lifespan="off",
            access_log=logs and not quiet,
            log_level="warning" if quiet else "info",
            log_config=log_config if logs else None,
            timeout_graceful_shutdown=1,  # SIGTERM ends a CI service within about a second
        ))
        self._on_ready = on_ready
        # the sandbox's own app has a context whose in-flight delays a stop ends; a proxy or a
        # replay served on this stack has none
        state = getattr(app, "state", None)
        self._ctx: SandboxContext | None = getattr(state, "ctx", None)
        self.ready = threading.Event()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._ctx is not None:
            self._ctx.stopping = True  # an injected delay in flight ends now, not in 10 s
        await super().shutdown(sockets=sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            if self._on_ready is not None:
                self._on_ready()
            self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

        previous = {s: signal.signal(s, handle)
                    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _outward_host(host: str) -> str:
    """A name other machines can use for a wildcard bind: the primary interface's address,
    else the host name."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    probe = ("2001:db8::1", 9) if family == socket.AF_INET6 else ("192.0.2.1", 9)
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.connect(probe)
            return str(udp.getsockname()[0])
    except OSError:
        return socket.gethostname()


def expose(config: SandboxConfig, host: str, port: int) -> list[str]:
    """A ``public_url`` and an admin token for a non-loopback bind; the lines to print."""
    if is_loopback(host):
        return []
    lines = [f"WARNING: the sandbox is bound to {host}, reachable from the network. It is a "
             "test double with published keys and test cards, not a secure service: expose "
             "it only on a trusted network."]
    if config.public_url is None:
        config.public_url = url_for(_outward_host(host), port)
        lines.append(f"public URL (hosted-page links, allowed Host): {config.public_url} "
                     "(set --public-url to change it)")
    if not config.admin_token:
        config.admin_token = secrets.token_urlsafe(24)
        lines.append(f"admin token (X-Sandbox-Token, required on /_sandbox/*): "
                     f"{config.admin_token}")
        lines.append("  use it with: walletctl sandbox reset --admin-token TOKEN "
                     "(or $WALLETCTL_SANDBOX_TOKEN)")
    else:
        lines.append("admin routes (/_sandbox/*) require the X-Sandbox-Token you configured")
    return lines


def _listen(config: SandboxConfig, host: str, port: int) -> tuple[socket.socket, str, list[str]]:
    """The bound socket, its URL and :func:`expose`'s lines; ``config`` gets the host and a
    public URL."""
    if config.faults.active and not is_loopback(host):
        raise ValueError("faults: fault injection is only allowed on a loopback host")
    config.host = host
    sock = _bind(host, port)
    real_port = sock.getsockname()[1]
    url = url_for(host, real_port)
    lines = expose(config, host, real_port)
    if config.public_url is None:
        config.public_url = url
    return sock, url, lines


def serve(host: str, port: int, config: SandboxConfig, *, out: TextIO | None = None,
          ready_file: Path | None = None,
          on_listen: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT/SIGTERM: the listening line, then the ready line
    and ``ready_file`` (removed on stop) once requests are accepted. ValueError for faults on a
    non-loopback host, OSError when the port cannot be bound."""
    stream = out or sys.stdout
    # a worker thread (a large body parsed, a seed) hands the event loop the GIL within
    # half a millisecond, not Python's default 5 ms per hand-over (docs/sandbox.md)
    sys.setswitchinterval(0.0005)
    sock, url, warnings = _listen(config, host, port)
    sys.stderr.write("".join(line + "\n" for line in warnings))
    sys.stderr.flush()
    loop, http = _stack()

    def ready() -> None:
        if ready_file is not None:  # atomically: never half a line
            tmp = ready_file.with_name(f".{ready_file.name}.{os.getpid()}.tmp")
            tmp.write_text(url + "\n", encoding="utf-8")
            os.replace(tmp, ready_file)
        stream.write(f"walletctl sandbox ready ({loop}/{http}, db "
                     f"{config.db_path or 'in-memory'}, amounts {config.amount_format})\n"
                     "Ctrl-C stops it\n")
        stream.flush()

    app: FastAPI | None = None
    try:
        app = create_app(config)
        if on_listen is not None:  # e.g. `serve --write-profile`: the URL known, not served
            on_listen(url)
        stream.write(f"walletctl sandbox listening on {url}\n")
        stream.flush()
        _Server(app, config, sock.getsockname()[1], logs=True, stack=(loop, http),
                on_ready=ready).run(sockets=[sock])
    finally:
        sock.close()
        if app is not None:
            store_of(app).close()
        if ready_file is not None:
            with contextlib.suppress(OSError):
                ready_file.unlink()
    stream.write("walletctl sandbox stopped\n")
    stream.flush()


class EmbeddedSandbox:
    """The sandbox on a free loopback port, served from a background thread: ``.url`` (e.g.
    ``http://127.0.0.1:54321``), ``.app``, ``.store``, ``.config``."""

    def __init__(self, config: SandboxConfig | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, startup_timeout: float = 15.0,
                 stack: tuple[str, str] | None = None) -> None:
        self.config = config or SandboxConfig(quiet=True)
        self.stack = stack
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.url = ""
        self._app: FastAPI | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._error: BaseException | None = None

    @property
    def app(self) -> FastAPI:
        if self._app is None:
            raise RuntimeError("the sandbox is not running")
        return self._app

    @property
    def store(self) -> Store:
        return store_of(self.app)

    def start(self) -> EmbeddedSandbox:
        # a non-loopback host gets a public URL and an admin token, its warnings unprinted
        self._sock, self.url, _ = _listen(self.config, self.host, self.port)
        self.port = self._sock.getsockname()[1]
        self._app = create_app(self.config)
        self._server = _Server(self._app, self.config, self.port, stack=self.stack)
        server, sock = self._server, self._sock

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                self._error = exc
                server.ready.set()

        self._thread = threading.Thread(target=run, name="walletctl-sandbox", daemon=True)
        self._thread.start()
        if not server.ready.wait(self.startup_timeout):  # set once serving, or on failure
            self.stop()
            raise RuntimeError("the embedded sandbox did not start in time")
        if self._error is not None or not server.started:
            self.stop()
            raise RuntimeError(f"the embedded sandbox failed to start: {self._error!r}")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        if self._app is not None:
            with contextlib.suppress(Exception):
                store_of(self._app).close()
        self._thread = None
        self._server = None
        self._sock = None

    def __enter__(self) -> EmbeddedSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:  # never shows the API key
        return f"EmbeddedSandbox(url={self.url!r})"
