"""Sandbox throughput: uvloop+httptools vs asyncio+h11, in ONE run (ratios, not absolutes).

    .venv/bin/python benchmarks/sandbox_bench.py [--seconds 3] [--connections 32]

Uses ``wrk`` when installed (with a Lua script for the POST), else a threaded httpx client.
Measures a trivial GET (/_sandbox/health) and a checkout (one SQLite insert per request), and
prints req/s per stack plus the fast/slow ratio. The issue measured ≈3x on a trivial endpoint.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
from itertools import count
from pathlib import Path
from typing import Any

from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

STACKS = (("uvloop", "httptools"), ("asyncio", "h11"))
AUTH_HEADERS = {"Authorization": "PublicApiKey sandbox-api-key"}


def make_checkout_body(ref: str) -> dict[str, Any]:
    return {
        "merchantId": "M-BENCH", "storeId": "S-01", "userId": "bench", "type": "ecom.sale",
        "amount": "1234", "currencyCode": "EUR", "clientSystemTransactionId": ref,
        "checkoutDetails": {"paymentMethod": "WalletV2"},
        "redirectDetails": {"returnUrl": "https://shop.example/r",
                            "successUrl": "https://shop.example/ok",
                            "pendingUrl": "https://shop.example/p",
                            "errorUrl": "https://shop.example/e",
                            "cancelUrl": "https://shop.example/e",
                            "refusedUrl": "https://shop.example/e"},
    }

_LUA = """
counter = 0
request = function()
  counter = counter + 1
  local body = string.gsub(wrk.body, "REF%-PLACEHOLDER", "B-" .. id .. "-" .. counter)
  return wrk.format("POST", "/api/v5/checkout", nil, body)
end
setup = function(thread) thread:set("id", tostring(math.random(1, 1000000000))) end
init = function(args) id = id or tostring(math.random(1, 1000000000)) end
"""


def _wrk(url: str, seconds: int, connections: int, script: str | None) -> float:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return float(match.group(1)) if match else 0.0


def _python_load(url: str, seconds: int, connections: int, post: bool) -> float:
    import httpx

    done = count()
    stop = time.monotonic() + seconds
    refs = count()

    def worker() -> None:
        with httpx.Client(headers=AUTH_HEADERS) as client:
            while time.monotonic() < stop:
                if post:
                    client.post(url, json=make_checkout_body(f"P-{next(refs)}"))
                else:
                    client.get(url)
                next(done)

    threads = [threading.Thread(target=worker) for _ in range(min(connections, 8))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (next(done) - 1) / seconds


def measure(stack: tuple[str, str], seconds: int, connections: int) -> dict[str, float]:
    with EmbeddedSandbox(SandboxConfig(quiet=True), stack=stack) as sb, \
            tempfile.TemporaryDirectory() as tmp:
        results: dict[str, float] = {}
        if shutil.which("wrk"):
            body = json.dumps(make_checkout_body("REF-PLACEHOLDER"))
            script = Path(tmp) / "post.lua"
            script.write_text(
                f"wrk.method = 'POST'\nwrk.body = {json.dumps(body)}\n"
                f"wrk.headers['Content-Type'] = 'application/json'\n"
                f"wrk.headers['Authorization'] = '{AUTH_HEADERS['Authorization']}'\n" + _LUA
            )
            results["health"] = _wrk(sb.url + "/_sandbox/health", seconds, connections, None)
            results["checkout"] = _wrk(sb.url + "/api/v5/checkout", seconds, connections,
                                       str(script))
        else:
            results["health"] = _python_load(sb.url + "/_sandbox/health", seconds,
                                             connections, False)
            results["checkout"] = _python_load(sb.url + "/api/v5/checkout", seconds,
                                               connections, True)
        results["stored"] = float(sb.store.count())
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    table = {f"{loop}/{http}": measure((loop, http), args.seconds, args.connections)
             for loop, http in STACKS}
    for name, res in table.items():
        print(f"{name:18} health {res['health']:9.0f} req/s   checkout {res['checkout']:9.0f} "
              f"req/s   ({res['stored']:.0f} stored)")
    fast, slow = (table[f"{a}/{b}"] for a, b in STACKS)
    for key in ("health", "checkout"):
        ratio = fast[key] / slow[key] if slow[key] else float("nan")
        print(f"ratio uvloop+httptools / asyncio+h11 ({key}): {ratio:.2f}x")


if __name__ == "__main__":
    main()
