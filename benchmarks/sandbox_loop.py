"""How long one request holds the sandbox's event loop: a second client's latency.

Starts ``walletctl sandbox serve`` in a subprocess; a second client polls ``/_sandbox/health``
every 20 ms on its own connection while one client sends, in turn, each costly request:

* a 10,000-row ``POST /_sandbox/seed`` (the documented maximum),
* about 1 MB bodies of several shapes (500k zeros in an array, deep-ish nesting, many keys,
  one long string) to routes that need no credential (``/wallet/token``,
  ``/_sandbox/faults``, ``/demo/merchant/api/result``),
* a full ``GET /_sandbox/ledger`` (after the seeds: ``--rounds`` x 10,000 transactions).

Prints, per request, its own time and the health poller's worst and median latency while it
ran, and the overall worst; exits 1 when a worst latency passes ``--max-ms`` (default 100).

    python benchmarks/sandbox_loop.py [--rounds 2] [--max-ms 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import httpx

JSON = {"Content-Type": "application/json"}


def _seed_body(round_no: int, n: int = 10_000) -> bytes:
    return json.dumps({"merchantId": "M-LOOP", "storeId": "S-1", "currency": "EUR",
                       "kind": "sale", "transactions": [
                           {"reference": f"LOOP-{round_no}-{i}", "amount": "10.00"}
                           for i in range(n)]}).encode()


def bodies() -> dict[str, tuple[str, bytes]]:
    """Name -> (path, about 1 MB of body)."""
    zeros = b'{"x": [' + b",".join([b"0"] * 499_990) + b"]}"
    nested = b'{"x": ' + b'{"a": [' * 31 + b"1" + b"]}" * 31 + b"}"
    many = b"{" + b",".join(b'"k%d": 1' % i for i in range(80_000)) + b"}"
    floats = b'{"x": [' + b",".join([b"1.5"] * 249_000) + b"]}"
    text = b'{"x": "' + b"a" * 998_000 + b'"}'
    wide = b'{"x": [' + b",".join([b"{}"] * 330_000) + b"]}"
    return {
        "500k zeros -> /wallet/token": ("/wallet/token", zeros),
        "250k decimals -> /_sandbox/faults": ("/_sandbox/faults", floats),
        "80k keys -> /demo/merchant/api/result": ("/demo/merchant/api/result", many),
        "330k objects -> /wallet/token": ("/wallet/token", wide),
        "1 MB string -> /_sandbox/wallet/token": ("/_sandbox/wallet/token", text),
        "nesting 32 deep -> /wallet/token": ("/wallet/token", nested),
    }


class Poller:
    def __init__(self, url: str, every: float = 0.02) -> None:
        self.url, self.every = url, every
        self.samples: list[tuple[float, float]] = []  # (start, latency)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                client.get(self.url + "/_sandbox/health").raise_for_status()
                self.samples.append((start, time.perf_counter() - start))
                time.sleep(self.every)

    def during(self, start: float, end: float) -> list[float]:
        return [lat for t, lat in self.samples if t + lat >= start and t <= end]

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def _idle(client: httpx.Client) -> httpx.Response:
    time.sleep(2)
    return httpx.Response(200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="10,000-row seeds to send")
    parser.add_argument("--max-ms", type=float, default=100.0)
    args = parser.parse_args()
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    worst_all = 0.0
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" on ", 1)[1].strip()
        proc.stdout.readline()
        work: list[tuple[str, Callable[[httpx.Client], httpx.Response]]] = [
            ("(idle: nothing sent for 2 s, the noise floor)", _idle)]
        def post(path: str, body: bytes) -> Callable[[httpx.Client], httpx.Response]:
            return lambda client: client.post(url + path, content=body, headers=JSON)

        for r in range(args.rounds):
            work.append((f"seed 10,000 rows #{r + 1}", post("/_sandbox/seed", _seed_body(r))))
        for name, (path, body) in bodies().items():
            work.append((name, post(path, body)))
        work.append(("full ledger read", lambda client: client.get(url + "/_sandbox/ledger")))
        with Poller(url) as poller, httpx.Client(timeout=120) as client:
            time.sleep(0.3)
            print(f"{'request':44} {'status':>6} {'took ms':>8} {'worst ms':>9} "
                  f"{'median ms':>9}")
            for name, send in work:
                start = time.perf_counter()
                answer = send(client)
                end = time.perf_counter()
                time.sleep(0.05)
                seen = poller.during(start, end) or [0.0]
                worst_all = max(worst_all, max(seen))
                print(f"{name:44} {answer.status_code:>6} {(end - start) * 1000:>8.0f} "
                      f"{max(seen) * 1000:>9.1f} {statistics.median(seen) * 1000:>9.1f}")
        print(f"worst health latency: {worst_all * 1000:.1f} ms (goal < {args.max_ms:g} ms)")
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
    sys.exit(0 if worst_all * 1000 < args.max_ms else 1)


if __name__ == "__main__":
    main()
