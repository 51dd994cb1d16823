"""A tiny misbehaving gateway on a real loopback port (raw sockets, one thread per client).

``FakeGateway(handler)``: ``handler(method, path, headers, body)`` returns a list of
``bytes`` chunks (the raw response, head included) or ``(bytes, delay_seconds)`` pairs to
send them slowly. ``json_response(...)`` builds a plain HTTP/1.1 answer.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

Chunk = bytes | tuple[bytes, float]
Handler = Callable[[str, str, dict[str, str], bytes], list[Chunk]]


def response(status: int, body: bytes, headers: dict[str, str] | None = None,
             content_type: str = "application/json") -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def json_response(status: int, data: Any, headers: dict[str, str] | None = None) -> bytes:
    return response(status, json.dumps(data).encode(), headers)


class FakeGateway:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._stop = False
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._stop = True
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                part = conn.recv(65536)
                if not part:
                    return
                data += part
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                part = conn.recv(65536)
                if not part:
                    break
                body += part
            self.requests.append((method, path, headers, body))
            for chunk in self.handler(method, path, headers, body):
                if isinstance(chunk, tuple):
                    data_, delay = chunk
                    time.sleep(delay)
                    conn.sendall(data_)
                else:
                    conn.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()
