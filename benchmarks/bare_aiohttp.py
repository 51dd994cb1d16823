"""The HTTP library's own ceiling: capture POSTs on aiohttp with no bookkeeping at all.

    python benchmarks/bare_aiohttp.py URL COUNT CONCURRENCY

Sends COUNT capture POSTs (distinct references, the body walletctl sends) from CONCURRENCY
workers on one aiohttp session, reads and parses every answer, and prints
``{"requests_per_s": ..., "cpu_ms_per_request": ...}``. No journal, history, checks or
models: what walletctl's batch transport could reach in this process on this machine at
this moment, the reference its rows/s are compared with in benchmarks/batch.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp

HEADERS = {"Content-Type": "application/json", "Accept": "application/json",
           "Authorization": "PublicApiKey sandbox-api-key"}


def body(i: int) -> bytes:
    ref = f"BARE-{i:07d}"
    return json.dumps({
        "merchantId": "M-BENCH", "storeId": "S-01", "userId": "bench", "type": "ecom.capture",
        "amount": "750", "currencyCode": "EUR", "clientSystemTransactionId": f"{ref}-C",
        "clientSystemInvoiceId": ref, "apmDetails": {"apmProvider": "WalletV2"},
    }).encode()


async def run(url: str, count: int, concurrency: int) -> None:
    todo = iter(range(count))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def worker() -> None:
            for i in todo:
                async with session.post(url + "/api/v5/apmTransactions", data=body(i),
                                        headers=HEADERS) as resp:
                    json.loads(await resp.read())

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def main() -> None:
    url, count, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    started, cpu = time.monotonic(), time.process_time()
    asyncio.run(run(url, count, concurrency))
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
    print(json.dumps({"requests_per_s": count / elapsed,
                      "cpu_ms_per_request": 1000 * cpu / count}))


if __name__ == "__main__":
    main()
