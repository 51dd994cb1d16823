"""AsyncGatewayClient: the batch engines' client, on aiohttp's connection pool directly.

It shares ``_Base`` (requests, answers, error mapping) with the sync client but not httpx's
request and response objects, which cost a batch row about twice aiohttp's whole send
(benchmarks/batch.py). What aiohttp's exceptions prove:

    ClientConnectorError (refused, DNS, TLS), connect timeout, bad URL  -> nothing was sent
    anything else after the connection was made                        -> it may have arrived
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any, Literal, Self
from urllib.parse import urlencode

import aiohttp
from yarl import URL

from walletctl.client.answer_guard import (
    BadEncoding,
    BodyReader,
    BodyTooLarge,
    DeadlineExceeded,
    clean_text,
    overall_deadline,
)
from walletctl.client.gateway import (
    Answer,
    FollowUpCall,
    Outgoing,
    PreparedCall,
    Trace,
    _Base,
    reason_of,
)
from walletctl.models.records import TransactionRecord

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.models.followup import FollowUpRequest, FollowUpResponse


MAX_HEADER_LINE = 64 * 1024
# What BodyReader decodes (aiohttp would otherwise offer br/zstd when those are installed).
ACCEPT_ENCODING = "gzip, deflate"
_NOT_SENT: tuple[type[Exception], ...] = (
    aiohttp.ClientConnectorError,  # refused, DNS, TLS handshake, proxy connect
    aiohttp.ConnectionTimeoutError,  # connect (or waiting for a pooled connection) timed out
    aiohttp.InvalidURL,
)


def _connect_reason(exc: Exception) -> str:
    """The cause, worded like the single commands' (httpx) messages: aiohttp's own text
    wraps it in "Cannot connect to host ... ssl:default [...]"."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert = exc.certificate_error
        detail = getattr(cert, "verify_message", None) or reason_of(cert)
        return f"certificate verify failed: {detail}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        err = exc.os_error
        if isinstance(err, OSError) and err.errno and err.errno > 0:
            return f"[Errno {err.errno}] {os.strerror(err.errno)}"
        return reason_of(err)
    return reason_of(exc)


class AsyncGatewayClient(_Base):
    """Async client on one aiohttp connection pool (batch work)."""

    def __init__(self, profile: Profile, *, max_connections: int = 100, trace: Trace | None = None,
                 auth_header: tuple[str, str] | Literal["resolve"] | None = "resolve") -> None:
        super().__init__(profile, trace=trace, auth_header=auth_header)
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None  # made in the running loop
        self._yarl: dict[str, URL] = {}
        t = self.timeout
        self._client_timeout = aiohttp.ClientTimeout(
            total=None, connect=t.pool, sock_connect=t.connect, sock_read=t.read)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        from walletctl.client.tls import tls_context

        # the sync client's context (httpx's defaults, SSL_CERT_FILE / SSL_CERT_DIR honoured),
        # so both verify alike
        connector = aiohttp.TCPConnector(
            limit=self._max_connections, limit_per_host=0,
            ssl=tls_context(self.profile.base_url), keepalive_timeout=5.0)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._client_timeout,
            auto_decompress=False,  # BodyReader decodes, within its caps
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),  # a gateway's cookies are never sent back
            raise_for_status=False,
            # aiohttp refuses header lines over 8 KiB; httpx (the single commands) reads
            # them, and a batch must not fail where the same command succeeds
            max_line_size=MAX_HEADER_LINE,
            max_field_size=MAX_HEADER_LINE,
        )
        return self._session

    def _build(self, method: str, url: str, params: dict[str, str] | None,
               headers: dict[str, str], content: bytes | None) -> Outgoing:
        self._parsed(url)  # checked like the sync client's (InvalidURL -> nothing sent)
        headers["Accept-Encoding"] = ACCEPT_ENCODING
        if params:
            url = f"{url}?{urlencode(params)}"
        return Outgoing(method, url, headers, content)

    def _url(self, url: str) -> URL:
        """Parsed once per URL without a query (a batch posts to one URL)."""
        found = self._yarl.get(url)
        if found is None:
            found = URL(url, encoded=True)
            if "?" not in url and len(self._yarl) < 64:
                self._yarl[url] = found
        return found

    async def send(self, call: PreparedCall) -> Any:
        self._trace_request(call)
        started = time.perf_counter()
        request = call.request
        session = self._session or self._open()
        try:
            async with asyncio.timeout(overall_deadline(self.profile.timeout)):
                async with session.request(
                    request.method, self._url(str(request.url)), headers=request.headers,
                    data=request.content, allow_redirects=False,
                ) as response:
                    reader = BodyReader(response.headers.get("Content-Encoding"))
                    async for chunk in response.content.iter_any():
                        reader.feed(chunk)
                    body = reader.finish()
        except _NOT_SENT as exc:
            raise self._not_connected(call, _connect_reason(exc)) from None
        except aiohttp.ClientResponseError as exc:  # an answer aiohttp could not parse
            raise self._no_answer(call, f"unreadable answer: {clean_text(exc.message)[:200]}"
                                  ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise self._no_answer(call, reason_of(exc)) from None
        except TimeoutError:
            raise self._map_guard_error(call, DeadlineExceeded()) from None
        except (BodyTooLarge, BadEncoding) as exc:
            raise self._map_guard_error(call, exc) from None
        answer = Answer(response.status, response.headers, body, self._secrets(call))
        self._trace_response(answer, time.perf_counter() - started)
        return self._handle(call, answer)

    async def followup(self, req: FollowUpRequest) -> FollowUpResponse:
        return await self.followup_call(FollowUpCall.of(req, self.profile.amount_format))

    async def followup_call(self, call: FollowUpCall) -> FollowUpResponse:
        """Send an encoded follow-up (a batch's rows, from a template); its answer is checked
        against what was sent, as for the single command."""
        return self._followup_answer(call, await self.send(self._post_followup(call)))

    async def lookup(self, reference: str) -> list[TransactionRecord]:
        return self._records(await self.send(self.prepare_lookup(reference)))
