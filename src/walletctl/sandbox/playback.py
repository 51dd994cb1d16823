"""``sandbox serve --replay DIR``: a recording's answers served for matching requests.

A request matches a recorded one with the same method, path, query and body (the body
masked as the recording's was, compared as JSON when it is JSON); among several, the first
not yet answered in recorded order, then the last one (a repeated request gets its answer
again). Anything else is answered 501 naming the closest recorded request.
"""

from __future__ import annotations

import difflib
import json
from decimal import Decimal
from typing import Any, Final

from starlette.types import Receive, Scope, Send

from walletctl.sandbox.middleware import MAX_BODY, read_body
from walletctl.sandbox.recording import Recorded, mask_body, masker_for
from walletctl.sandbox.replies import error_body

_DROPPED: Final = frozenset({"content-length", "transfer-encoding", "connection", "date",
                             "server", "keep-alive"})
_CLOSEST_OF: Final = 200  # candidates compared for the 501's "closest" (bounded cost)



def _canonical(body: str) -> Any:
    if not body.strip():
        return ""
    try:
        return json.loads(body, parse_float=Decimal)
    except ValueError:
        return body


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first field where two JSON bodies differ (None when they do not)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{path}{key}"
            found = _first_difference(a[key], b[key], f"{path}{key}.")
            if found:
                return found
        return None
    return None if a == b else (path.rstrip(".") or "(body)")


def _flat(data: Any, path: str = "") -> dict[str, Any]:
    """A JSON body as ``{dotted path: scalar}`` (the 501's closest match counts them)."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{path}{key}."))
        return out
    return {path.rstrip(".") or "(body)": data}


class PlaybackApp:
    """ASGI app answering from ``exchanges`` (in recorded order)."""

    def __init__(self, exchanges: list[Recorded]) -> None:
        self.exchanges = exchanges
        self.by_key: dict[tuple[str, str, str], list[int]] = {}
        for i, ex in enumerate(exchanges):
            key = (ex.request.method, ex.request.path, ex.request.query)
            self.by_key.setdefault(key, []).append(i)
        self.canonical = [_canonical(ex.request.body) for ex in exchanges]
        self.used: set[int] = set()
        self.cursor = 0

    def match(self, method: str, path: str, query: str, body: Any) -> int | None:
        found = [i for i in self.by_key.get((method, path, query), ())
                 if self.canonical[i] == body]
        if not found:
            return None
        fresh = [i for i in found if i not in self.used]
        chosen = next((i for i in fresh if i >= self.cursor), fresh[0] if fresh else found[-1])
        self.used.add(chosen)
        self.cursor = max(self.cursor, chosen + 1)
        return chosen

    def closest(self, method: str, path: str, query: str, body: Any) -> str:
        if not self.exchanges:
            return "the recording is empty"
        wanted = f"{method} {path}?{query}"
        same = [i for key, items in self.by_key.items() if key[:2] == (method, path)
                for i in items][:_CLOSEST_OF]
        pool = same or list(range(min(len(self.exchanges), _CLOSEST_OF)))

        given = _flat(body)

        def score(i: int) -> tuple[int, float]:
            ex = self.exchanges[i]
            text = f"{ex.request.method} {ex.request.path}?{ex.request.query}"
            recorded = _flat(self.canonical[i])
            same = sum(1 for k, v in given.items() if recorded.get(k, given) == v)
            return (same - len(given.keys() ^ recorded.keys()),
                    difflib.SequenceMatcher(None, wanted, text).ratio())

        best = max(pool, key=score)
        ex = self.exchanges[best]
        where = ""
        if same:
            field = _first_difference(self.canonical[best], body)
            where = f" (differs at {field})" if field else " (already answered)"
        shown = ex.request.path + (f"?{ex.request.query}" if ex.request.query else "")
        return f"#{ex.seq} {ex.request.method} {shown}{where}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await read_body(receive)
        if raw is None:
            return
        if not isinstance(raw, bytes):  # larger than MAX_BODY
            await _answer(send, 413, [], json.dumps(error_body(
                413, f"(request): body larger than {MAX_BODY} bytes")).encode())
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        body = _canonical(mask_body(masker_for([headers], [raw]), raw))
        index = self.match(method, path, query, body)
        if index is None:
            text = (f"(replay): no recorded exchange matches {method} {path}; the closest "
                    f"recorded request is {self.closest(method, path, query, body)}")
            await _answer(send, 501, [], json.dumps(error_body(
                501, text, code="REPLAY-501", description="NotRecorded")).encode())
            return
        answer = self.exchanges[index].answer
        out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items()
               if k.lower() not in _DROPPED]
        await _answer(send, answer.status, out, answer.body.encode("utf-8"))


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]],
                  body: bytes) -> None:
    if not any(k == b"content-type" for k, _ in headers):
        headers = [*headers, (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
