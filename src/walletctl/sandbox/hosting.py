"""Serving another ASGI app (the proxy, a recording's playback) in the foreground on the
sandbox's own server stack: the same bounded connections, deadlines, ready line, ready file
and quiet exit on SIGINT/SIGTERM as ``sandbox serve`` (:mod:`walletctl.sandbox.server`)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from walletctl.sandbox import server
from walletctl.sandbox.config import SandboxConfig, is_loopback


def serve_app(app: Any, config: SandboxConfig, host: str, port: int, *, name: str,
              details: str, ready_file: Path | None = None, out: TextIO | None = None,
              on_listen: Callable[[str], None] | None = None) -> None:
    """Serve ``app`` until SIGINT/SIGTERM: ``walletctl sandbox NAME listening on URL``, then
    the ready line (with ``details``) and ``ready_file`` once requests are accepted. OSError
    when the port cannot be bound."""
    stream = out or sys.stdout
    config.host = host
    sock = server._bind(host, port)
    url = server.url_for(host, sock.getsockname()[1])
    if not is_loopback(host):
        sys.stderr.write(f"WARNING: the {name} is bound to {host}, reachable from the network: "
                         "expose it only on a trusted network.\n")
    loop, http = server._stack()

    def ready() -> None:
        if ready_file is not None:  # atomically: never half a line
            tmp = ready_file.with_name(f".{ready_file.name}.{os.getpid()}.tmp")
            tmp.write_text(url + "\n", encoding="utf-8")
            os.replace(tmp, ready_file)
        stream.write(f"walletctl sandbox {name} ready ({loop}/{http}, {details})\n"
                     "Ctrl-C stops it\n")
        stream.flush()

    try:
        if on_listen is not None:
            on_listen(url)
        stream.write(f"walletctl sandbox {name} listening on {url}\n")
        stream.flush()
        server._Server(app, config, sock.getsockname()[1], logs=True, stack=(loop, http),
                       on_ready=ready).run(sockets=[sock])
    finally:
        sock.close()
        if ready_file is not None:
            with contextlib.suppress(OSError):
                ready_file.unlink()
    stream.write(f"walletctl sandbox {name} stopped\n")
    stream.flush()
