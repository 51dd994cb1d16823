"""``walletctl sandbox proxy``: an ASGI app that forwards every request to an upstream gateway
unchanged, checks the gateway routes' requests and answers (:mod:`.conformance`), reports
each violation as it is found and, optionally, records each exchange (:mod:`.recording`).

Costs are bounded like the sandbox's own: a request body of at most ``MAX_BODY`` bytes, the
bodies held at once within the body budget, an answer of at most ``MAX_ANSWER`` bytes; the
upstream is called with an async client, so a slow upstream or a large body holds only its
own request, never another client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, TextIO, TypeVar

import httpx
from starlette.types import Receive, Scope, Send

from walletctl.masking import Masker
from walletctl.models.money import AmountFormat
from walletctl.models.sandbox_values import DEFAULT_BODY_BUDGET
from walletctl.sandbox.conformance import Checker, Exchange, Violation
from walletctl.sandbox.middleware import MAX_BODY, OVER_BUDGET, read_body
from walletctl.sandbox.recording import Recorder, masker_for
from walletctl.sandbox.replies import error_body

MAX_ANSWER: Final = 16 * 1024 * 1024  # an upstream answer larger than this: 502
# hop-by-hop headers (RFC 9110 7.6.1) and the ones the client sets itself
_HOP: Final = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                         "transfer-encoding", "upgrade", "host", "content-length"})
_ANSWER_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer",
                                "upgrade", "content-length"})



class ViolationLog:
    """Writes each violation as one line (``text``) or one JSON object (``json``), masked."""

    def __init__(self, fmt: str = "text", stream: TextIO | None = None) -> None:
        self.fmt = fmt
        self.stream = stream
        self.count = 0

    def __call__(self, violation: Violation, masker: Masker | None = None) -> None:
        self.count += 1
        hide = masker.text if masker is not None else (lambda text: text)
        if self.fmt == "json":
            line = json.dumps({"event": "violation",
                               **{k: hide(v) for k, v in violation.to_json().items()}})
        else:
            line = "violation " + hide(violation.line())
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()


async def _send_error(send: Send, status: int, message: str) -> None:
    body = json.dumps(error_body(status, message), separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


INLINE_BYTES: Final = 64 * 1024  # bodies read on the event loop; larger ones on a thread
_T = TypeVar("_T")


async def _maybe_off_loop(size: int, func: Callable[..., _T], *args: Any) -> _T:
    """``func(*args)`` here for small bodies, on a worker thread for large ones."""
    if size <= INLINE_BYTES:
        return func(*args)
    return await asyncio.to_thread(func, *args)


class ProxyApp:
    """The proxy as an ASGI app (``close()`` when done)."""

    def __init__(self, upstream: str, *, amount_format: AmountFormat = "minor",
                 log: ViolationLog | None = None, recorder: Recorder | None = None,
                 body_budget: int = DEFAULT_BODY_BUDGET, timeout: float = 30.0,
                 max_connections: int = 100) -> None:
        self.upstream = upstream.rstrip("/")
        self.log = log or ViolationLog()
        self.recorder = recorder
        self.budget, self.held = body_budget, 0
        self.checker = Checker(amount_format, self._found)
        self._masker: Masker | None = None  # the exchange being checked
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=max_connections,
                                max_keepalive_connections=max_connections),
            follow_redirects=False, trust_env=False)
        self.exchanges = 0

    def _found(self, violation: Violation) -> None:
        self.log(violation, self._masker)

    async def close(self) -> None:
        await self.client.aclose()

    async def _over_budget(self, send: Send) -> None:
        await _send_error(send, 503, f"(request): the proxy holds {self.budget} bytes of "
                          "request bodies at once, across all connections; try again shortly")

    async def _read_body(self, receive: Receive, send: Send,
                         held: list[int]) -> bytes | None:
        """The whole request body within the limits (``held[0]``: the bytes of the budget
        this request holds, grown as a body without a length arrives), None when answered
        already."""
        def reserve(size: int) -> bool:
            if size > held[0]:
                if self.held + size - held[0] > self.budget:
                    return False
                self.held += size - held[0]
                held[0] = size
            return True

        body = await read_body(receive, reserve)
        if isinstance(body, str):
            if body == OVER_BUDGET:
                await self._over_budget(send)
            else:
                await _send_error(send, 413, f"(request): body larger than {MAX_BODY} bytes")
            return None
        return body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        announced = next((int(v) for k, v in scope["headers"] if k == b"content-length"
                          and v.isdigit() and len(v) < 19), 0)
        if announced > MAX_BODY:
            await _send_error(send, 413, f"(request): body larger than {MAX_BODY} bytes")
            return
        if self.held + announced > self.budget:
            await self._over_budget(send)
            return
        held = [announced]
        self.held += announced
        try:
            await self._exchange(scope, receive, send, started, held)
        finally:
            self.held -= held[0]

    async def _exchange(self, scope: Scope, receive: Receive, send: Send,
                        started: float, held: list[int]) -> None:
        body = await self._read_body(receive, send, held)
        if body is None:
            return
        method, path = scope["method"], scope["path"]
        query: bytes = scope.get("query_string", b"")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        request_headers = dict(headers)
        # a large body is read on a worker thread (the event loop stays free for the other
        # clients); the order's rules and the report run here, on the loop, one at a time
        ex, found, masker = await _maybe_off_loop(len(body), self._read_request, method,
                                                  path, query, body, request_headers)
        with self._masking(masker):
            found = self.checker.judge_request(ex, found)
        url = self.upstream + (scope.get("raw_path") or path.encode()).decode("latin-1")
        if query:
            url += "?" + query.decode("latin-1")
        forward = [(k, v) for k, v in headers if k.lower() not in _HOP]
        sent = time.perf_counter()
        try:
            answer = await self._call(method, url, forward, body)
        except httpx.TimeoutException:
            await _send_error(send, 504, "(proxy): the upstream gateway did not answer in time")
            return
        except httpx.HTTPError as exc:
            await _send_error(send, 502, f"(proxy): the upstream gateway could not be reached "
                              f"({type(exc).__name__})")
            return
        if answer is None:
            await _send_error(send, 502, f"(proxy): the upstream's answer is larger than "
                              f"{MAX_ANSWER} bytes")
            return
        status, answer_headers, answer_body = answer
        upstream_ms = (time.perf_counter() - sent) * 1000
        out_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer_headers
                       if k.lower() not in _ANSWER_HOP]
        out_headers.append((b"content-length", str(len(answer_body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        await send({"type": "http.response.body", "body": answer_body})
        self.exchanges += 1
        answer_dict = dict(answer_headers)
        encoded = answer_dict.get("content-encoding", "identity").lower() != "identity"
        if not encoded:
            problems, parsed, masker = await _maybe_off_loop(
                len(body) + len(answer_body), self._read_answer, ex, status, body, answer_body,
                request_headers, answer_dict)
            with self._masking(masker):
                found = found + self.checker.judge_answer(ex, problems, parsed)
        if self.recorder is not None:  # masked and written off the event loop
            await asyncio.to_thread(
                self.recorder.write, seq=self.recorder.next_seq(),
                method=method, path=path, query=query.decode("latin-1"),
                request_headers=request_headers, request_body=body, status=status,
                answer_headers=answer_dict,
                answer_body=answer_body if not encoded else b"(encoded answer not recorded)",
                upstream_ms=upstream_ms, total_ms=(time.perf_counter() - started) * 1000,
                violations=[v.to_json() for v in found])

    def _read_request(self, method: str, path: str, query: bytes, body: bytes,
                      headers: dict[str, str]) -> tuple[Exchange, list[Violation], Masker]:
        ex, found = self.checker.read_request(method, path, query, body)
        return ex, found, masker_for([headers], [body])

    def _read_answer(self, ex: Exchange, status: int, body: bytes, answer_body: bytes,
                     request_headers: dict[str, str], answer_headers: dict[str, str],
                     ) -> tuple[list[Violation], list[Any] | None, Masker]:
        found, parsed = self.checker.read_answer(ex, status, answer_body,
                                                 answer_headers.get("content-type", ""))
        return found, parsed, masker_for([request_headers, answer_headers],
                                         [body, answer_body])

    @contextlib.contextmanager
    def _masking(self, masker: Masker) -> Iterator[None]:
        """Violations reported meanwhile are masked with the exchange's secrets."""
        self._masker = masker
        try:
            yield
        finally:
            self._masker = None

    async def _call(self, method: str, url: str, headers: list[tuple[str, str]],
                    body: bytes) -> tuple[int, list[tuple[str, str]], bytes] | None:
        request = self.client.build_request(method, url, headers=headers,
                                            content=body if body else None)
        given = {k.lower() for k, _ in headers}
        for name in ("accept", "accept-encoding", "user-agent"):  # the client's defaults
            if name not in given and name in request.headers:
                del request.headers[name]
        response = await self.client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > MAX_ANSWER:
                    return None
                chunks.append(chunk)
            return (response.status_code, [(k.lower(), v) for k, v in
                                           response.headers.multi_items()], b"".join(chunks))
        finally:
            await response.aclose()
