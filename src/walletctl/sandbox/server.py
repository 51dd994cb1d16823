"""Running the sandbox: :func:`serve` (foreground) and :class:`EmbeddedSandbox` (a background
thread), on uvloop + httptools when installed (else asyncio + h11). The socket is bound here,
so with port 0 the real port is known before serving."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import uvicorn
from fastapi import FastAPI

from walletctl.sandbox.app import create_app, store_of
from walletctl.sandbox.config import SandboxConfig, is_loopback
from walletctl.sandbox.middleware import install_log_filter
from walletctl.sandbox.protocol import ConnectionLimits, h11_buffer_limit, protocol_class
from walletctl.sandbox.store import Store


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
    """uvicorn.Server that reports readiness and exits quietly on SIGINT/SIGTERM."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        self.ready = threading.Event()

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


def _log_config(quiet: bool) -> dict[str, Any]:
    """Logs on stderr (stdout carries only the URL and ready lines)."""
    level = "WARNING" if quiet else "INFO"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(message)s"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                                "stream": "ext://sys.stderr"}},
        "loggers": {
            "uvicorn.error": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }


def _uvicorn_config(app: FastAPI, config: SandboxConfig, port: int, quiet: bool,
                    stack: tuple[str, str] | None = None, *,
                    logs: bool = False) -> uvicorn.Config:
    loop, http = stack or _stack()
    install_log_filter()
    limits = ConnectionLimits(request_timeout=config.request_timeout,
                              write_timeout=config.write_timeout,
                              max_connections=config.max_connections)
    return uvicorn.Config(
        app,
        host=config.host,
        port=port,
        loop=loop,
        http=protocol_class(http, limits),  # bounded connections: sandbox/protocol.py
        h11_max_incomplete_event_size=h11_buffer_limit(limits),
        lifespan="off",
        access_log=logs and not quiet,
        log_level="warning" if quiet else "info",
        log_config=_log_config(quiet) if logs else None,
        timeout_graceful_shutdown=1,  # SIGTERM ends a CI service within about a second
    )


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


def _write_ready_file(path: Path, url: str) -> None:  # atomically: never half a line
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(url + "\n", encoding="utf-8")
    os.replace(tmp, path)


def serve(host: str, port: int, config: SandboxConfig, *, out: TextIO | None = None,
          ready_file: Path | None = None,
          on_listen: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT/SIGTERM: the listening line, then the ready line
    and ``ready_file`` (removed on stop) once requests are accepted. ValueError for faults on a
    non-loopback host, OSError when the port cannot be bound."""
    stream = out or sys.stdout
    sock, url, warnings = _listen(config, host, port)
    sys.stderr.write("".join(line + "\n" for line in warnings))
    sys.stderr.flush()
    loop, http = _stack()

    def ready() -> None:
        if ready_file is not None:
            _write_ready_file(ready_file, url)
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
        _Server(_uvicorn_config(app, config, sock.getsockname()[1], quiet=config.quiet,
                                stack=(loop, http), logs=True), ready).run(sockets=[sock])
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
        self._server = _Server(
            _uvicorn_config(self._app, self.config, self.port, quiet=True, stack=self.stack),
            None
        )
        server, sock = self._server, self._sock

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                self._error = exc
                server.ready.set()

        self._thread = threading.Thread(target=run, name="walletctl-sandbox", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not server.ready.wait(0.05):
            if time.monotonic() > deadline:
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
