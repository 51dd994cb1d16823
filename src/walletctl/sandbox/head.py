"""HEAD wherever GET is (pure ASGI middleware).

FastAPI routes declared for GET answer HEAD with 405; here a HEAD request is routed as GET and
answered with the same status and headers (``Content-Length`` included) and no body. The
answer ends with the first part of the body, and the app then hears that the client has
gone, so a streamed body (the ledger) stops there instead of being produced and dropped:
a HEAD costs the same whatever the size of what GET would send.
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_GONE: Message = {"type": "http.disconnect"}


class HeadMiddleware:
    """See the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = anyio.Event()

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                if ended.is_set():
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
                ended.set()
            await send(message)

        async def receive_head() -> Message:
            received = _GONE
            async with anyio.create_task_group() as group:

                async def from_client() -> None:
                    nonlocal received
                    received = await receive()
                    group.cancel_scope.cancel()

                group.start_soon(from_client)
                await ended.wait()  # the answer is complete: the client has gone for the app
                group.cancel_scope.cancel()
            return received

        await self.app({**scope, "method": "GET"}, receive_head, send_head)
