"""The validation proxy's cost: added latency per request (median, p99) and its memory over
10,000 proxied requests.

Starts ``walletctl sandbox serve`` (the gateway) and ``walletctl sandbox proxy`` in front of
it, as processes, then sends the same mix of requests — nine lookups of an approved order
for each new checkout (the proxy checks both, remembers each order) — once straight to the
gateway and once through the proxy, alternating, one keep-alive connection each. Prints
both latency distributions, the difference (the proxy's cost) and the proxy's resident set
after start-up, after the first 1,000 and after all requests (``VmRSS``), and its peak
(``VmHWM``, Linux).

    python benchmarks/proxy.py [--requests 10000] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

AUTH = {"Authorization": "PublicApiKey sandbox-api-key"}
M, S = "M-BENCH", "S-01"


def _start(work: Path, name: str, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    ready = work / f"{name}.url"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", *args, "--port", "0",
                             "--ready-file", str(ready)], stdout=subprocess.DEVNULL,
                            stderr=(work / f"{name}.err").open("w"), env=env)
    deadline = time.monotonic() + 60
    while not (ready.exists() and ready.read_text().endswith("\n")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{name} did not start: {(work / f'{name}.err').read_text()}")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _checkout(ref: str) -> dict[str, object]:
    return {"merchantId": M, "storeId": S, "userId": "u", "type": "ecom.preauthorization",
            "amount": "2500", "currencyCode": "EUR", "clientSystemTransactionId": ref,
            "checkoutDetails": {"paymentMethod": "WalletV2"},
            "redirectDetails": {k: "https://shop.example/x" for k in (
                "returnUrl", "successUrl", "pendingUrl", "errorUrl", "cancelUrl",
                "refusedUrl")}}


def _one(client: httpx.Client, i: int, prefix: str) -> float:
    started = time.perf_counter()
    if i % 10 == 0:
        answer = client.post("/api/v5/checkout", json=_checkout(f"{prefix}-{i}"))
    else:
        answer = client.get("/api/v5/apmTransactions", params={
            "merchantId": M, "storeId": S, "clientSystemTransactionId": "BENCH-ORDER"})
    elapsed = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"request {i}: {answer.status_code} {answer.text[:200]}")
    return elapsed


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--record", action="store_true", help="the proxy records too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gateway, gw_url = _start(work, "gateway", "sandbox", "serve", "-q")
        extra = ["--record", str(work / "rec")] if args.record else []
        proxy, px_url = _start(work, "proxy", "sandbox", "proxy", "--upstream", gw_url, *extra)
        try:
            with httpx.Client(base_url=gw_url, headers=AUTH, timeout=30) as direct, \
                    httpx.Client(base_url=px_url, headers=AUTH, timeout=30) as proxied:
                direct.post("/api/v5/checkout", json=_checkout("BENCH-ORDER"))
                direct.post(f"/_sandbox/checkouts/BENCH-ORDER/approve?merchantId={M}")
                for i in range(200):  # warm-up, both paths
                    _one(direct, i + 1, "warm-d")
                    _one(proxied, i + 1, "warm-p")
                rss_start = _kib(proxy.pid, "VmRSS")
                times_direct: list[float] = []
                times_proxied: list[float] = []
                rss_1k = 0
                for i in range(args.requests):
                    times_direct.append(_one(direct, i, "d"))
                    times_proxied.append(_one(proxied, i, "p"))
                    if i == 999:
                        rss_1k = _kib(proxy.pid, "VmRSS")
                rss_end, peak = _kib(proxy.pid, "VmRSS"), _kib(proxy.pid, "VmHWM")
        finally:
            for proc in (proxy, gateway):
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        violations = (work / "proxy.err").read_text().count("violation ")
    med_d, med_p = statistics.median(times_direct), statistics.median(times_proxied)
    p99_d, p99_p = _p(times_direct, 0.99), _p(times_proxied, 0.99)
    report = {
        "requests": args.requests, "record": args.record,
        "direct_ms": {"median": round(med_d, 3), "p99": round(p99_d, 3)},
        "proxied_ms": {"median": round(med_p, 3), "p99": round(p99_p, 3)},
        "added_ms": {"median": round(med_p - med_d, 3), "p99": round(p99_p - p99_d, 3)},
        "proxy_rss_mib": {"start": round(rss_start / 1024, 1),
                          "after_1k": round(rss_1k / 1024, 1),
                          "after_all": round(rss_end / 1024, 1),
                          "peak": round(peak / 1024, 1)},
        "violations_reported": violations,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
