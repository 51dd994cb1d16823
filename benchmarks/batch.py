"""Batch throughput and memory, measured in one run against a local sandbox.

    python benchmarks/batch.py --quick      # about a minute
    python benchmarks/batch.py              # larger N, best of 3, real-run memory too

Prints a table of:
 1. rows/s against a stub gateway answering after a fixed 50 ms, as a ratio to the physical
    limit concurrency / latency, at c=8 and c=64 (rows whose amount is given, each on its own
    original: the direct path, one round trip per row) and at c=8 with --full-preflight (two
    round trips per row); requests/s too, and the CPU seconds walletctl spends per 1,000 rows.
    Two references from the same minute: wrk on the same POSTs (what the machine allows) and
    benchmarks/bare_aiohttp.py (the HTTP library alone, no bookkeeping: what a Python client
    on this transport can reach); then the same at c=64 against the sandbox;
 2. requests/s with no added latency, as a ratio to ``wrk`` driving the SAME requests (capture
    POSTs of distinct, seeded pre-authorisations, so every wrk request does real work) on the
    same endpoint at the same concurrency;
 3. peak memory (ru_maxrss of the walletctl process, see peak_rss.py) for 10k and 100k rows with
    ``--dry-run --offline`` (everything but the sending); the full mode adds real runs of 2k
    and 20k rows.

The sandbox runs in this process (uvicorn in a thread); walletctl and wrk run as child
processes, so client and server do not share a GIL. Seeding writes the pre-authorisations
straight into the sandbox's store (two HTTP requests per row would dominate the run time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import wrk_run  # this directory's shared wrk runner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from walletctl.sandbox.config import SandboxConfig  # noqa: E402
from walletctl.sandbox.server import EmbeddedSandbox  # noqa: E402

MERCHANT, STORE, KEY = "M-BENCH", "S-01", "sandbox-api-key"
PY = sys.executable


def seed(sb: EmbeddedSandbox, refs: list[str], amount: str = "10.00") -> None:
    """Reset the sandbox, then store approved pre-authorisations (every step starts equal)."""
    httpx.post(sb.url + "/_sandbox/reset").raise_for_status()
    now = datetime.now(UTC)
    with sb.store.atomic():
        for ref in refs:
            sb.store.create_transaction(
                merchant_id=MERCHANT, store_id=STORE, reference=ref, kind="preauth",
                type_str="ecom.preauthorization", amount=Decimal(amount), currency="EUR",
                state="Approved", method="WalletV2", now=now)


def profile(directory: Path, url: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "profiles.toml"
    path.write_text(textwrap.dedent(f"""\
        default_profile = "bench"
        [profiles.bench]
        base_url = "{url}"
        merchant_id = "{MERCHANT}"
        store_id = "{STORE}"
        user_id = "bench"
        currency = "EUR"
        timeout = 30
        [profiles.bench.auth]
        scheme = "PublicApiKey"
        key = "{KEY}"
        """))
    os.chmod(path, 0o600)
    return path


def faults(url: str, spec: dict[str, Any]) -> None:
    httpx.post(url + "/_sandbox/faults", json=spec).raise_for_status()


def env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    e.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1",
             PYTHONPATH=str(ROOT / "src"), **(extra or {}))
    return e


def run_child(cmd: list[str], child_env: dict[str, str],
              stdout: Any = None) -> tuple[int, str, str, int, float]:
    """Run a child; return (exit code, stdout, stderr, peak RSS KiB, CPU s) of THAT child,
    measured by benchmarks/peak_rss.py (see there why not straight from this process).
    ``stdout``: a file to send the child's output to (then "" is returned for it)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.TemporaryDirectory() as scratch:
        stats = Path(scratch) / "stats.json"
        launcher = [PY, str(Path(__file__).with_name("peak_rss.py")), str(stats)]
        code = subprocess.call([*launcher, *cmd], env=child_env, stdout=stdout or out,
                               stderr=err)
        out.seek(0)
        err.seek(0)
        measured = json.loads(stats.read_text())
        return (code, out.read(), err.read(), int(measured["maxrss_kib"]),
                float(measured["cpu_s"]))


@contextlib.contextmanager
def stub_gateway(latency_ms: int) -> Iterator[str]:
    """benchmarks/stub_gateway.py in its own process; yields its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([PY, str(Path(__file__).with_name("stub_gateway.py")), str(port),
                             str(latency_ms)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # "ready"
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _latency_row(name: str, s: dict[str, Any], limit: float,
                 base_cpu: float) -> tuple[str, str, str, str]:
    rows_s = s["rows"] / s["elapsed_s"]
    req_s = s["requests"] / s["elapsed_s"]
    cpu = 1000 * max(0.0, s["cpu_s"] - base_cpu) / s["rows"]
    return (name,
            f"{rows_s:.0f} rows/s, {req_s:.0f} req/s ({s['requests'] / s['rows']:.2f} req/row); "
            f"CPU {cpu:.2f} s/1k rows",
            f"c/latency = {limit:.0f}/s",
            f"rows {rows_s / limit:.2f}, requests {req_s / limit:.2f} of c/latency")


def best(reps: int, measure: Any) -> dict[str, Any]:
    """The fastest of ``reps`` runs (the machine may be shared: noise only ever slows)."""
    runs = [measure() for _ in range(reps)]
    return max(runs, key=lambda r: r["requests"] / r["elapsed_s"])


def _wrk_once(sb: EmbeddedSandbox, work: Path, refs: list[str], c: int, seconds: int,
              latency: float = 0.0) -> float:
    """wrk's capture POSTs on ``refs`` seeded. wrk runs for a duration: a sandbox faster
    than ``refs`` allow runs out of them, its answers fail and the run is refused (what
    crashed ``--quick`` above about 3,000 requests/s); then it runs again on four times as
    many, at most twice more."""
    prefix = refs[0].split("-")[0]
    for attempt in range(3):
        seed(sb, refs)
        faults(sb.url, {"latency": int(latency * 1000), "jitter": 0} if latency else {})
        try:
            return run_wrk(work, sb.url, prefix, c, seconds)
        except wrk_run.WrkError:
            if attempt == 2:
                raise
            refs = [f"{prefix}-{i:07d}" for i in range(len(refs) * 4)]
            print(f"wrk ran out of seeded references: again with {len(refs)}",
                  file=sys.stderr)
        finally:
            faults(sb.url, {})
    raise AssertionError("unreachable")


def batch_run(work: Path, cfg: Path, refs: list[str], concurrency: int,
              extra: list[str] | None = None, launcher: list[str] | None = None,
              reset: tuple[EmbeddedSandbox, list[str]] | None = None,
              fresh_journal: bool = False,
              extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    if reset is not None:  # a fresh ledger for every repetition
        seed(*reset)
    if reset is not None or fresh_journal:  # and a fresh journal
        for old in work.glob("*.journal*"):
            old.unlink()
    src = work / f"in-{refs[0]}-{len(refs)}.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"{r},7.50,EUR\n" for r in refs))
    cmd = (launcher or [PY, "-m", "walletctl"]) + [
        "--config", str(cfg), "-o", "json", "capture", "--batch", str(src),
        "--concurrency", str(concurrency), *(extra or [])]
    code, out, err, rss, cpu = run_child(cmd, env(work, extra_env))
    if code != 0:
        raise SystemExit(f"walletctl batch failed ({code}): {err[-2000:]}")
    if "--dry-run" in (extra or []):  # NDJSON: one line per row, no summary document
        return {"maxrss_kib": rss, "lines": out.count("\n")}
    summary: dict[str, Any] = json.loads(out)
    summary["maxrss_kib"] = rss
    summary["cpu_s"] = round(cpu, 2)
    return summary


def bare_aiohttp(url: str, count: int, concurrency: int) -> float:
    """benchmarks/bare_aiohttp.py in its own process: the library's requests/s."""
    proc = subprocess.run([PY, str(Path(__file__).with_name("bare_aiohttp.py")), url,
                           str(count), str(concurrency)], capture_output=True, text=True,
                          check=True)
    return float(json.loads(proc.stdout)["requests_per_s"])


WRK_LUA = """
local n = 0
local prefix = "%(prefix)s"
wrk.headers["Authorization"] = "PublicApiKey %(key)s"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  local ref = string.format("%%s-%%07d", prefix, n - 1)
  local body = '{"merchantId":"%(merchant)s","storeId":"%(store)s","userId":"bench",'
    .. '"type":"ecom.capture","amount":"750","currencyCode":"EUR",'
    .. '"clientSystemTransactionId":"' .. ref .. '-C","clientSystemInvoiceId":"' .. ref .. '",'
    .. '"apmDetails":{"apmProvider":"WalletV2"}}'
  return wrk.format("POST", "/api/v5/apmTransactions", nil, body)
end
"""


def run_wrk(work: Path, url: str, prefix: str, concurrency: int, seconds: int) -> float:
    script = work / "mix.lua"
    script.write_text(WRK_LUA % {"prefix": prefix, "key": KEY, "merchant": MERCHANT,
                                 "store": STORE})
    # One thread keeps the Lua counter global: every request names a distinct reference.
    # Seeded rows run out when wrk outpaces the seeding: 1 % errors allowed, no more.
    return wrk_run.rate(url, seconds=seconds, connections=concurrency, threads=1,
                        script=str(script), max_error_share=0.01)


class _NoDisconnects(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "ClientDisconnect"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller N (about a minute)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--shared-history", action="store_true",
                    help="only: rows/s with the history on PostgreSQL vs SQLite (c=8, c=64)")
    args = ap.parse_args()
    if args.shared_history:
        shared_history_rows(quick=args.quick)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian package `wrk`)")
    c = args.concurrency
    n_lat = 400 if args.quick else 1500
    n_fast = 2000 if args.quick else 5000
    reps = 2 if args.quick else 3
    # wrk stops mid-request; the sandbox would log each cut connection as an ASGI error
    logging.getLogger("uvicorn.error").addFilter(_NoDisconnects())
    rows: list[tuple[str, str, str, str]] = []
    work = Path(tempfile.mkdtemp(prefix="walletctl-bench-"))
    try:
        with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
            cfg = profile(work, sb.url)

            # 1. fixed 50 ms latency: rows/s against the physical limit c / latency. The
            # limit needs a server that is not itself the bottleneck: a stub gateway in its
            # own process (benchmarks/stub_gateway.py) answers every request after exactly
            # 50 ms. Direct path (one round trip per row) at c=8 and c=64, and c=8 with
            # --full-preflight (two round trips per row) for comparison. Then the same at
            # c=64 against the sandbox, with wrk at the same latency as the server's ceiling.
            latency = 0.050
            with stub_gateway(50) as stub_url:
                stub_cfg = profile(work / "stub", stub_url)
                base_cpu = batch_run(work, stub_cfg, ["B-0000000"], 1)["cpu_s"]
                cases = [(8, n_lat, []), (64, n_lat * 8, []), (8, n_lat, ["--full-preflight"])]
                for conc, n, extra in cases:
                    refs = [f"L{conc}{len(extra)}-{i:07d}" for i in range(n)]
                    s = best(reps, lambda refs=refs, conc=conc, extra=extra: batch_run(
                        work, stub_cfg, refs, conc, extra=extra, fresh_journal=True))
                    print(f"[1] stub c={conc} {extra} {s}", file=sys.stderr)
                    row = _latency_row(f"1. stub +50 ms, c={conc}, {n} rows"
                                       + (" --full-preflight" if extra else ""),
                                       s, conc / latency, base_cpu)
                    if not extra:  # wrk on the same stub: what this machine allows right now,
                        # and the HTTP library alone (no bookkeeping): what Python can
                        ceiling = run_wrk(work, stub_url, "X", conc, 3)
                        lib = max(bare_aiohttp(stub_url, n, conc) for _ in range(reps))
                        rows_s = s["rows"] / s["elapsed_s"]
                        row = (row[0], row[1],
                               row[2] + f"; wrk same POSTs {ceiling:.0f}/s; bare aiohttp "
                               f"{lib:.0f}/s ({lib / (conc / latency):.2f})",
                               row[3] + f"; {rows_s / ceiling:.2f} of wrk; "
                               f"{rows_s / lib:.2f} of bare aiohttp")
                    rows.append(row)
            n = n_lat * 8
            refs = [f"LS-{i:07d}" for i in range(n)]
            faults(sb.url, {"latency": int(latency * 1000), "jitter": 0})
            s = best(reps, lambda: batch_run(work, cfg, refs, 64, reset=(sb, refs)))
            faults(sb.url, {})
            wrk_refs = [f"WL-{i:07d}" for i in range(n * 4)]
            wrk_lat = max(_wrk_once(sb, work, wrk_refs, 64, 3, latency) for _ in range(reps))
            row = _latency_row(f"1s. sandbox +50 ms, c=64, {n} rows", s, 64 / latency, base_cpu)
            rows.append((row[0], row[1], row[2] + f"; wrk same POSTs {wrk_lat:.0f}/s",
                         row[3] + f"; {s['rows'] / s['elapsed_s'] / wrk_lat:.2f} of wrk"))

            # 2. no added latency: walletctl vs wrk, same requests (one capture POST per row:
            # the direct path), same endpoint, same concurrency
            refs = [f"F-{i:07d}" for i in range(n_fast)]
            s = best(reps, lambda: batch_run(work, cfg, refs, c, reset=(sb, refs)))
            print(f"[2] walletctl {s}", file=sys.stderr)
            ours = s["requests"] / s["elapsed_s"]
            # wrk runs for a duration: seed what it can use (run_wrk refuses a run with more
            # than 1% errors, i.e. one that ran out of seeded pre-authorisations)
            wrk_refs = [f"W-{i:07d}" for i in range(n_fast * 3)]
            theirs = max(_wrk_once(sb, work, wrk_refs, c, 2) for _ in range(reps))
            print(f"[2] ours {ours:.0f} wrk {theirs:.0f}", file=sys.stderr)
            cpu = 1000 * max(0.0, s["cpu_s"] - base_cpu) / s["rows"]
            rows.append((f"2. no added latency, c={c}, {n_fast} rows",
                         f"{ours:.0f} req/s ({s['rows_per_s']:.0f} rows/s); CPU "
                         f"{cpu:.2f} s/1k rows",
                         f"wrk, same capture POSTs: {theirs:.0f} req/s",
                         f"{ours / theirs:.2f} of wrk (target >= 0.5)"))
            # 3. peak memory for 10k and 100k rows: --dry-run (parse, validate, plan into the
            # journal, build every request; a real 100k run takes many minutes against the
            # sandbox, which slows down as its ledger grows)
            mem: dict[int, int] = {}
            for n in (10_000, 100_000):
                refs = [f"M{n}-{i:07d}" for i in range(n)]
                s = batch_run(work, cfg, refs, c, extra=["--dry-run", "--offline"])
                assert s["lines"] == n, s
                mem[n] = int(s["maxrss_kib"])
                print(f"[3] {n}: {mem[n]} KiB", file=sys.stderr)
            rows.append(("3. peak memory (ru_maxrss), --dry-run --offline",
                         f"10k: {mem[10_000] / 1024:.1f} MiB",
                         f"100k: {mem[100_000] / 1024:.1f} MiB",
                         f"{mem[100_000] / mem[10_000]:.2f}x (target <= 1.5x)"))
            if not args.quick:  # the runner itself: real captures, results to a file
                real: dict[int, int] = {}
                for n in (2_000, 20_000):
                    refs = [f"R{n}-{i:07d}" for i in range(n)]
                    s = batch_run(work, cfg, refs, c, reset=(sb, refs),
                                  extra=["--results", str(work / f"r{n}.ndjson")])
                    real[n] = int(s["maxrss_kib"])
                    print(f"[3r] {n}: {real[n]} KiB, {s['rows_per_s']} rows/s", file=sys.stderr)
                rows.append(("3b. peak memory, real runs",
                             f"2k: {real[2_000] / 1024:.1f} MiB",
                             f"20k: {real[20_000] / 1024:.1f} MiB",
                             f"{real[20_000] / real[2_000]:.2f}x for 10x the rows"))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    width = [max(len(r[i]) for r in rows) for i in range(4)]
    head = ("measure", "walletctl", "reference", "ratio")
    width = [max(w, len(h)) for w, h in zip(width, head, strict=True)]
    print("  ".join(h.ljust(w) for h, w in zip(head, width, strict=True)))
    print("  ".join("-" * w for w in width))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, width, strict=True)))


def shared_history_rows(*, quick: bool) -> None:
    """Rows/s of the same batch (stub gateway, +50 ms) with the history in a local SQLite
    file and in a PostgreSQL database over loopback, interleaved, best of N each: the
    shared history's group commits and per-row desk locks must keep >= 0.9 of the speed."""
    sys.path.insert(0, str(Path(__file__).parent))
    from pg_server import shared_history

    reps = 3 if quick else 5
    n_lat = 400 if quick else 1500
    work = Path(tempfile.mkdtemp(prefix="walletctl-bench-pg-"))
    lines = []
    try:
        with shared_history(work) as (url, pg_env), stub_gateway(50) as stub_url:
            cfg = profile(work / "stub", stub_url)
            arms = {"sqlite": None, "postgresql": {**pg_env, "WALLETCTL_HISTORY_URL": url}}
            for conc, n in ((8, n_lat), (64, n_lat * 8)):
                got: dict[str, list[float]] = {arm: [] for arm in arms}
                for rep in range(reps):
                    for arm, extra in arms.items():
                        refs = [f"H{arm[0]}{conc}r{rep}-{i:07d}" for i in range(n)]
                        s = batch_run(work, cfg, refs, conc, fresh_journal=True,
                                      extra_env=extra)
                        got[arm].append(s["rows"] / s["elapsed_s"])
                        print(f"[h] c={conc} {arm} rep {rep}: {got[arm][-1]:.0f} rows/s",
                              file=sys.stderr)
                local, shared = max(got["sqlite"]), max(got["postgresql"])
                lines.append(f"c={conc:<3} {n} rows: SQLite history {local:6.0f} rows/s, "
                             f"PostgreSQL history {shared:6.0f} rows/s, ratio "
                             f"{shared / local:.2f} (target >= 0.9)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("batch with the history on PostgreSQL (loopback) vs SQLite, stub gateway +50 ms, "
          f"best of {reps}")
    for line in lines:
        print("  " + line)


if __name__ == "__main__":
    main()
