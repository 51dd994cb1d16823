"""A minimal stub gateway for client-side throughput measurements (not a sandbox).

    python benchmarks/stub_gateway.py PORT LATENCY_MS

Raw asyncio HTTP/1.1 keep-alive server, run as its own process: every POST is answered as
an approved follow-up echoing the request's ``clientSystemTransactionId``; every GET (a
lookup) with one approved 10.00 EUR pre-authorisation carrying the queried reference; both
after ``LATENCY_MS``. It does no bookkeeping, so what limits a measurement against it is the
client (and the machine), never the server: the "physical limit" concurrency / latency.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys

_TXN = re.compile(rb'"clientSystemTransactionId"\s*:\s*"([^"]*)"')
_QREF = re.compile(rb"clientSystemTransactionId=([^&\s]*)")


def _answer(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 latency: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:].strip())
            body = await reader.readexactly(length) if length else b""
            await asyncio.sleep(latency)
            out: object
            if head.startswith(b"POST"):
                m = _TXN.search(body)
                ref = m.group(1).decode() if m else "x"
                out = {"id": f"stub-{ref}", "state": "Approved",
                       "providerStateCode": "CapturedByProvider", "currencyCode": "EUR",
                       "clientSystemTransactionId": ref}
            else:
                m = _QREF.search(head)
                ref = m.group(1).decode() if m else "x"
                out = [{
                    "id": f"stub-{ref}", "state": "Approved", "currencyCode": "EUR",
                    "transactionAmount": "1000", "clientSystemTransactionId": ref,
                    "type": "ecom.preauthorization",
                    "transactionDateTime": "2026-01-02T03:04:05.0000000"}]
            writer.write(_answer(json.dumps(out).encode()))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, latency_ms: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, latency_ms / 1000), "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
