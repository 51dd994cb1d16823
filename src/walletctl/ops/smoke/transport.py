"""Recording every HTTP exchange of a smoke run, so a failing step shows its request/response.

:class:`RecordingTransport` wraps the httpx transport the gateway client uses; each exchange is
summarised (method, path, status, time, masked and truncated bodies; never headers) into an
:class:`ExchangeLog`. The runner marks the log before a step and attaches what came after.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from walletctl.masking import Masker

BODY_LIMIT = 600


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str  # path + query (no host, no credentials)
    status: int | None  # None: no response (connection error / timeout)
    duration: float
    request: str | None  # masked, truncated body
    response: str | None  # masked, truncated body, or the transport error

    def summary(self) -> str:
        status = str(self.status) if self.status is not None else "no response"
        lines = [f"{self.method} {self.path} -> {status} ({self.duration * 1000:.0f} ms)"]
        if self.request:
            lines.append(f"  request:  {self.request}")
        if self.response:
            lines.append(f"  response: {self.response}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration": round(self.duration, 4)}


class ExchangeLog:
    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._items: list[Exchange] = []

    def mark(self) -> int:
        return len(self._items)

    def since(self, mark: int) -> list[Exchange]:
        return list(self._items[mark:])

    def all(self) -> list[Exchange]:
        return list(self._items)

    def record(
        self,
        request: httpx.Request,
        status: int | None,
        duration: float,
        response_body: bytes | str | None,
        content_type: str = "",
    ) -> None:
        try:
            req_body = request.content
        except httpx.RequestNotRead:  # a streamed upload: not summarised
            req_body = b""
        path = request.url.raw_path.decode("ascii", "replace")
        self._items.append(
            Exchange(
                method=request.method,
                path=self.masker.text(path),
                status=status,
                duration=duration,
                request=self._body(req_body, request.headers.get("content-type", "")),
                response=self._body(response_body, content_type),
            )
        )

    def _body(self, body: bytes | str | None, content_type: str) -> str | None:
        if not body:
            return None
        text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        if "json" in content_type or text[:1] in "[{":
            try:
                data = json.loads(text)
            except ValueError:
                pass
            else:
                self.masker.add_from(data)
                text = json.dumps(self.masker.data(data), separators=(",", ":"))
        text = self.masker.text(text.replace("\n", " "))
        if len(text) > BODY_LIMIT:
            text = text[:BODY_LIMIT] + f"... ({len(text) - BODY_LIMIT} more characters)"
        return text


class RecordingTransport(httpx.BaseTransport):
    """A sync transport that forwards to ``inner`` and records a summary of each exchange."""

    def __init__(self, inner: httpx.BaseTransport, log: ExchangeLog) -> None:
        self._inner = inner
        self._log = log

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = time.perf_counter()
        try:
            response = self._inner.handle_request(request)
        except Exception as exc:
            self._log.record(request, None, time.perf_counter() - start, type(exc).__name__)
            raise
        try:
            raw = b"".join(response.stream)  # type: ignore[arg-type]
        finally:
            response.close()
        duration = time.perf_counter() - start
        decoded = httpx.Response(response.status_code, headers=response.headers,
                                 stream=httpx.ByteStream(raw))
        try:
            body: bytes | None = decoded.read()
        except httpx.DecodingError:
            body = None
        self._log.record(request, response.status_code, duration, body,
                         response.headers.get("content-type", ""))
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(raw),
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        self._inner.close()
