"""Bounded connections (docs/sandbox.md, "Connections and limits"): uvicorn's httptools and h11
protocols with a header limit (431), a request deadline (408), a write deadline, a connection
cap (503) and gateway-shaped 400s for malformed HTTP. Such an answer closes the connection
after draining for up to :data:`LINGER` seconds (so the client reads it, not a reset).
"""

from __future__ import annotations

import asyncio
import fcntl
import http
import json
import resource
import sys
import termios
from dataclasses import dataclass, field
from typing import Any

import h11
import httptools
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from walletctl.sandbox.config import (
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    MAX_HEADER_BYTES,
)
from walletctl.sandbox.replies import error_body

LINGER = 1.0
_OUTQ = getattr(termios, "TIOCOUTQ", None)  # a socket's unsent bytes (Linux: SIOCOUTQ)
READ_SIZE = 256 * 1024  # the most one socket read hands the protocol (asyncio and uvloop)
_MAX_CONNECTIONS_CAP = 10_000


def default_max_connections() -> int:
    """Half the soft ``RLIMIT_NOFILE``, at least 16 and at most 10 000."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS_CAP
    return max(16, min(_MAX_CONNECTIONS_CAP, soft // 2))


@dataclass
class ConnectionLimits:

    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    max_connections: int = 0  # 0: default_max_connections()
    max_header_bytes: int = MAX_HEADER_BYTES
    # connections answered by _refuse and still draining (at most half the cap)
    refusing: set[Any] = field(default_factory=set, compare=False, repr=False)

    connections: int = field(init=False)  # the cap in force

    def __post_init__(self) -> None:
        fd_cap = default_max_connections()
        self.connections = min(self.max_connections, fd_cap) if self.max_connections else fd_cap


def error_response(status: int, message: str,
                   extra: list[tuple[bytes, bytes]] | None = None) -> bytes:
    described = "RequestTimeout" if status == 408 else None
    body = json.dumps(error_body(status, message, description=described),
                      separators=(",", ":")).encode()
    phrase = http.HTTPStatus(status).phrase
    lines = [f"HTTP/1.1 {status} {phrase}".encode()]
    lines += [k + b": " + v for k, v in extra or []]
    lines += [b"content-type: application/json", b"content-length: " + str(len(body)).encode(),
              b"x-content-type-options: nosniff", b"connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class _Bounded(asyncio.Protocol):
    """The limits of both protocol classes; each says whether the current request's head and
    whole message are in (:meth:`_head_in`, :meth:`_message_in`)."""

    limits: ConnectionLimits  # set by protocol_class
    # provided by the uvicorn protocol class this is mixed into
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    server_state: Any
    cycle: Any
    flow: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # the uvicorn protocol's (next in the MRO)
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._write_mark = 0  # _unsent() when the write deadline was armed
        self._linger: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._refused = False
        self._url_too_long = False  # set by the httptools protocol's on_url

    def _head_in(self) -> bool:
        raise NotImplementedError

    def _message_in(self) -> bool:
        raise NotImplementedError

    # -- the deadline ----------------------------------------------------------------------

    def _arm(self) -> None:
        self._disarm()
        self._head_bytes = 0
        self._deadline = self.loop.call_later(self.limits.request_timeout, self._expired)

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
        self._refuse(408, f"(request): not received within {self.limits.request_timeout:g} s "
                     "(--request-timeout)")

    # -- the write deadline -------------------------------------------------------------------

    def _unsent(self) -> int:
        """Bytes of answers not yet taken by the client: the transport's buffer plus, on
        Linux, the socket's send queue."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if _OUTQ is not None and sock is not None:
            try:
                queued = fcntl.ioctl(sock.fileno(), _OUTQ, b"\0\0\0\0")
                unsent += int.from_bytes(queued, sys.byteorder)
            except OSError:
                pass
        return unsent

    def _arm_write(self) -> None:
        if self._write_deadline is None:
            self._write_mark = self._unsent()
            self._write_deadline = self.loop.call_later(self.limits.write_timeout,
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
        if not self.transport.get_write_buffer_size():
            return
        if self._unsent() < self._write_mark:  # the client took some: a new deadline
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
        """An answer is complete: what is still unsent must be taken within the deadline."""
        if not self.flow.write_paused:
            self._disarm_write()
        if self.transport.get_write_buffer_size():
            self._arm_write()

    # -- answering without the app -----------------------------------------------------------

    def _refuse(self, status: int, message: str) -> None:
        self._refused = True
        self._disarm()
        self.connections.discard(self)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the route running (if any) sees a disconnect
            cycle.message_event.set()
            if cycle.response_started:  # too late for another answer
                self.transport.close()
                return
        extra = list(getattr(self.server_state, "default_headers", []))
        self.transport.write(error_response(status, message, extra))
        if len(self.limits.refusing) >= max(4, self.limits.connections // 2):
            self.transport.close()  # enough connections draining: no descriptor to spare
            return
        self.limits.refusing.add(self)
        try:
            if self.transport.can_write_eof():
                self.transport.write_eof()
        except (OSError, RuntimeError):
            self.transport.close()
            return
        self._linger = self.loop.call_later(LINGER, self.transport.close)

    def _after_data(self, data: bytes) -> None:
        if self._refused or self.transport.is_closing():
            return
        if self._message_in():
            self._disarm()
        elif not self._head_in():
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._too_large()

    # -- the transport's hooks (before/after uvicorn's own, next in the MRO) ------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections:
            self._refuse(503, f"(connection): the sandbox has {self.limits.connections} "
                         "open connections, its limit; try again shortly")
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.limits.refusing.discard(self)
        self._disarm()
        self._disarm_write()
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # draining before the close
        super().data_received(data)
        self._after_data(data)

    def _too_large(self) -> None:
        self._refuse(431, "(request): request line and headers larger than "
                     f"{self.limits.max_header_bytes} bytes")

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            return
        if self._url_too_long:
            self._too_large()
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
        if len(self.url) > self.limits.max_header_bytes:
            # httptools cannot parse a URL over 64 KiB (its offsets are 16-bit): a 431, not
            # "malformed" (the parser error this raises is answered by send_400_response)
            self._url_too_long = True
            raise httptools.HttpParserError("request target too long")

    def on_headers_complete(self) -> None:
        self._head_done = True
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


def protocol_class(http_name: str, limits: ConnectionLimits) -> type[asyncio.Protocol]:
    base = SandboxHttpToolsProtocol if http_name == "httptools" else SandboxH11Protocol
    return type(base.__name__, (base,), {"limits": limits})


def h11_buffer_limit(limits: ConnectionLimits) -> int:
    """h11's own limit, set above ours so that ours (431, not 400) is met first."""
    return limits.max_header_bytes + READ_SIZE + 1
