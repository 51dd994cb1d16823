"""``walletctl lookup --batch`` throughput and memory, measured in one run.

    python benchmarks/lookup_batch.py --quick     # a few minutes
    python benchmarks/lookup_batch.py             # best of 3

Prints a table of:
 1. 10k references at c=32 against the sandbox (no added latency), as a ratio to ``wrk``
    driving the SAME lookup GET (distinct seeded references) on the same endpoint at the same
    concurrency;
 2. 50 ms latency at c=32, as a ratio to the physical limit concurrency / latency, against the
    stub gateway (benchmarks/stub_gateway.py, its own process, never the bottleneck) and
    against the sandbox (with wrk at the same latency as the server's ceiling);
 3. peak memory (ru_maxrss of the walletctl process) for 10k and 100k references (real
    lookups against the stub gateway at no latency; ``-o ndjson`` to a file).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from batch import (
    KEY,
    MERCHANT,
    PY,
    STORE,
    env,
    faults,
    profile,
    run_child,
    seed,
    stub_gateway,
)
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

WRK_GET = """
local n = 0
wrk.headers["Authorization"] = "PublicApiKey %(key)s"
request = function()
  n = n + 1
  local ref = string.format("%(prefix)s-%%07d", (n - 1) %% %(count)d)
  return wrk.format("GET", "/api/v5/apmTransactions?merchantId=%(merchant)s&storeId=%(store)s"
    .. "&clientSystemTransactionId=" .. ref)
end
"""


def wrk_get(work: Path, url: str, prefix: str, count: int, c: int, seconds: int) -> float:
    script = work / "get.lua"
    script.write_text(WRK_GET % {"key": KEY, "prefix": prefix, "count": count,
                                 "merchant": MERCHANT, "store": STORE})
    proc = subprocess.run(["wrk", "-t1", f"-c{c}", f"-d{seconds}s", "-s", str(script), url],
                          capture_output=True, text=True, check=True)
    match = re.search(r"Requests/sec:\s+([\d.]+)", proc.stdout)
    if match is None or "Non-2xx" in proc.stdout:
        raise SystemExit(f"wrk: unexpected output\n{proc.stdout}")
    return float(match.group(1))


def lookup_run(work: Path, cfg: Path, refs: list[str], c: int) -> dict[str, Any]:
    src = work / f"refs-{refs[0]}-{len(refs)}.csv"
    src.write_text("ref\n" + "".join(f"{r}\n" for r in refs))
    out_path = work / "out.ndjson"
    cmd = [PY, "-m", "walletctl", "--config", str(cfg), "-o", "ndjson", "lookup", "--batch",
           str(src), "--concurrency", str(c)]
    with out_path.open("w") as out:
        code, _, err, rss, cpu = run_child([*cmd, "--max-failures", "1000"], env(work),
                                           stdout=out)
    if code != 0:
        raise SystemExit(f"lookup --batch failed ({code}): {err[-2000:]}")
    with out_path.open("rb") as fh:
        fh.seek(max(0, out_path.stat().st_size - 4096))
        last = fh.read().decode().splitlines()[-1]
    import json

    summary: dict[str, Any] = json.loads(last)["summary"]
    if summary["errors"]:
        raise SystemExit(f"{summary['errors']} lookups failed: {summary}")
    summary["maxrss_kib"], summary["cpu_s"] = rss, cpu
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian package `wrk`)")
    reps = 1 if args.quick else 3
    c = 32
    rows: list[tuple[str, str, str, str]] = []
    work = Path(tempfile.mkdtemp(prefix="walletctl-lookup-bench-"))
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
            cfg = profile(work, sb.url)
            refs = [f"Q-{i:07d}" for i in range(10_000)]
            seed(sb, refs)
            s = max((lookup_run(work, cfg, refs, c) for _ in range(reps)),
                    key=lambda x: x["refs_per_s"])
            ours = s["requests"] / s["elapsed_s"]
            theirs = max(wrk_get(work, sb.url, "Q", len(refs), c, 3) for _ in range(reps))
            rows.append(("1. sandbox, c=32, 10k refs", f"{ours:.0f} lookups/s",
                         f"wrk same GETs: {theirs:.0f}/s", f"{ours / theirs:.2f} of wrk "
                         "(target >= 0.5)"))
            print(f"[1] {s} wrk {theirs}", file=sys.stderr)

            limit = c / 0.050
            n = 3_000
            faults(sb.url, {"latency": 50, "jitter": 0})
            s = lookup_run(work, cfg, refs[:n], c)
            wrk_lat = wrk_get(work, sb.url, "Q", n, c, 3)
            faults(sb.url, {})
            rate = s["requests"] / s["elapsed_s"]
            rows.append((f"2s. sandbox +50 ms, c=32, {n} refs", f"{rate:.0f} lookups/s",
                         f"c/latency = {limit:.0f}/s; wrk {wrk_lat:.0f}/s",
                         f"{rate / limit:.2f} of c/latency; {rate / wrk_lat:.2f} of wrk"))
            print(f"[2s] {s}", file=sys.stderr)
        with stub_gateway(50) as url:
            stub_cfg = profile(work / "stub", url)
            s = lookup_run(work, stub_cfg, refs[:n], c)
            rate = s["requests"] / s["elapsed_s"]
            rows.append((f"2. stub +50 ms, c=32, {n} refs", f"{rate:.0f} lookups/s",
                         f"c/latency = {limit:.0f}/s",
                         f"{rate / limit:.2f} of c/latency (target >= 0.9)"))
            print(f"[2] {s}", file=sys.stderr)
        with stub_gateway(0) as url:
            stub_cfg = profile(work / "stub0", url)
            mem = {}
            for count in (10_000, 100_000):
                s = lookup_run(work, stub_cfg, [f"M-{i:07d}" for i in range(count)], 64)
                mem[count] = s["maxrss_kib"]
                print(f"[3] {count}: {s}", file=sys.stderr)
            rows.append(("3. peak memory (ru_maxrss), real lookups",
                         f"10k: {mem[10_000] / 1024:.1f} MiB",
                         f"100k: {mem[100_000] / 1024:.1f} MiB",
                         f"{mem[100_000] / mem[10_000]:.2f}x (target <= 1.5x)"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ("measure", "walletctl", "reference", "ratio")
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for r in [head, tuple("-" * w for w in width), *rows]:
        print("  ".join(v.ljust(w) for v, w in zip(r, width, strict=True)))


if __name__ == "__main__":
    main()
