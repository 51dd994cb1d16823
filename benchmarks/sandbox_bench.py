"""Sandbox throughput, in ONE run (ratios, not absolutes: the machines are shared and noisy).

Usage:

    .venv/bin/python benchmarks/sandbox_bench.py --before /path/to/other/checkout/src
    .venv/bin/python benchmarks/sandbox_bench.py [--seconds 3] [--connections 32]

``--before SRC``: the cost of a change. Serves ``walletctl sandbox serve`` (a real
subprocess) from SRC (another checkout's ``src``, e.g. ``git worktree add /tmp/before
REV``) and from this checkout's ``src`` side by side, and measures checkout (POST, one
SQLite insert; every POST names a reference never used before) and lookup (GET of a stored
reference) requests/s with ``wrk`` at 10 and 50 connections, alternating trees, best of
``--rounds``; prints after/before ratios. About 50 s with the defaults. Needs ``wrk``; a
run with any error answer is refused (benchmarks/wrk_run.py), so a ratio is never built on
409s. Not part of CI: run it on a quiet machine.

Without ``--before``: uvloop+httptools vs asyncio+h11 (embedded servers) on
``/_sandbox/health`` and checkout; uses ``wrk`` when installed, else a threaded httpx client
(slower, so the ratio is only indicative). About 15 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import httpx
import wrk_run  # this directory's (the script's) shared wrk runner

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

# Every POST names a reference no run has used: wrk's Lua random numbers are the same in
# every wrk process (unseeded), so the run's prefix comes from here (``init(args)``), each
# thread gets its own number in ``setup`` and each request the next count. A reused
# reference would be answered 409 (or replayed) and measure that path instead of a checkout.
_LUA = """
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("id", threads) end
init = function(args) prefix = args[1] end
counter = 0
request = function()
  counter = counter + 1
  local ref = prefix .. "-" .. id .. "-" .. counter
  local body = string.gsub(wrk.body, "REF%-PLACEHOLDER", ref)
  return wrk.format("POST", "/api/v5/checkout", nil, body)
end
"""
_RUNS = count(1)


def _run_prefix() -> str:
    """A reference prefix no other wrk run of this process, or of an earlier one, used."""
    return f"B{os.getpid()}x{next(_RUNS)}x{secrets.token_hex(3)}"


def _wrk(url: str, seconds: int, connections: int, script: str | None,
         headers: dict[str, str] | None = None) -> float:
    """wrk's rate of 2xx answers (wrk_run refuses a run with error answers)."""
    return wrk_run.rate(url, seconds=seconds, connections=connections, script=script,
                        headers=headers, script_args=(_run_prefix(),) if script else ())


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
            results["health"] = _wrk(sb.url + "/_sandbox/health", seconds, connections, None)
            results["checkout"] = _wrk(sb.url + "/api/v5/checkout", seconds, connections,
                                       _post_script(tmp))
        else:
            results["health"] = _python_load(sb.url + "/_sandbox/health", seconds,
                                             connections, False)
            results["checkout"] = _python_load(sb.url + "/api/v5/checkout", seconds,
                                               connections, True)
        results["stored"] = float(sb.store.count())
        return results


def _post_script(directory: str) -> str:
    body = json.dumps(make_checkout_body("REF-PLACEHOLDER"))
    script = Path(directory) / "post.lua"
    script.write_text(
        f"wrk.method = 'POST'\nwrk.body = {json.dumps(body)}\n"
        f"wrk.headers['Content-Type'] = 'application/json'\n"
        f"wrk.headers['Authorization'] = '{AUTH_HEADERS['Authorization']}'\n" + _LUA
    )
    return str(script)


@contextlib.contextmanager
def _served(src: Path) -> Iterator[str]:
    """``walletctl sandbox serve`` from the sources in ``src``; yields its URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env["PYTHONPATH"] = str(src)
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", "sandbox", "serve", "--port",
                             "0", "-q"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" on ", 1)[1].strip()
        proc.stdout.readline()  # ready
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def compare_trees(before: Path, after: Path, seconds: int, rounds: int) -> None:
    if not shutil.which("wrk"):
        raise SystemExit("--before needs wrk (apt-get install wrk)")
    query = ("/api/v5/apmTransactions?merchantId=M-BENCH&storeId=S-01"
             "&clientSystemTransactionId=LOOKUP-1")
    best: dict[tuple[str, str, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp, _served(before) as url_b, \
            _served(after) as url_a:
        script = _post_script(tmp)
        for url in (url_b, url_a):
            resp = httpx.post(url + "/api/v5/checkout", headers=AUTH_HEADERS,
                              json=make_checkout_body("LOOKUP-1"))
            resp.raise_for_status()
        for _ in range(rounds):
            for conns in (10, 50):
                for tree, url in (("before", url_b), ("after", url_a)):
                    rates = {
                        "checkout": _wrk(url + "/api/v5/checkout", seconds, conns, script),
                        "lookup": _wrk(url + query, seconds, conns, None, AUTH_HEADERS),
                    }
                    for route, rate in rates.items():
                        key = (tree, route, conns)
                        best[key] = max(best.get(key, 0.0), rate)
    print(f"before: {before}\nafter:  {after}\n(best of {rounds} x {seconds} s, wrk -t2)")
    for route in ("checkout", "lookup"):
        for conns in (10, 50):
            b, a = best[("before", route, conns)], best[("after", route, conns)]
            print(f"{route:8} c={conns:<3} before {b:8.0f} req/s   after {a:8.0f} req/s   "
                  f"after/before {a / b if b else float('nan'):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3,
                        help="length of each wrk run (default: %(default)s)")
    parser.add_argument("--connections", type=int, default=32,
                        help="wrk connections without --before (default: %(default)s)")
    parser.add_argument("--before", type=Path, metavar="SRC",
                        help="another checkout's src/ directory to compare this tree with")
    parser.add_argument("--rounds", type=int, default=2,
                        help="runs per tree with --before, the best kept (default: "
                             "%(default)s)")
    args = parser.parse_args()
    if args.before is not None:
        before = args.before.resolve()
        if not (before / "walletctl" / "__init__.py").is_file():
            parser.error(f"--before {args.before}: no walletctl package there (give the "
                         "src/ directory of another checkout)")
        here = Path(__file__).resolve().parents[1] / "src"
        if before == here:
            parser.error("--before: this checkout's own src/ (compare with another one)")
        compare_trees(before, here, args.seconds, args.rounds)
        return
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
