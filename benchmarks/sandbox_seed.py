"""Bulk test data: ``walletctl sandbox seed`` against making the same data one by one.

    python benchmarks/sandbox_seed.py            # seed 1,000, capture --batch over them
    python benchmarks/sandbox_seed.py --n 5000

Starts ``walletctl sandbox serve --write-profile`` (a real process on a real port), then, as
child processes of this one, times:

1. ``walletctl sandbox seed N`` (approved pre-authorisations + the CSV): wall-clock seconds,
   against the target of 1,000 in under 10 s;
2. the way it was done before: ``checkout`` + ``sandbox approve`` per transaction (two CLI
   calls each), for a sample of 20, as seconds per transaction, and the ratio of the two;
3. ``walletctl capture --batch`` over the seeded CSV (rows/s).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WALLETCTL = [sys.executable, "-m", "walletctl"]


def _env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update({"WALLETCTL_CONFIG": str(config), "PYTHONPATH": str(ROOT / "src"),
                "WALLETCTL_AUDIT_LOG": str(config.parent / "history.sqlite3")})
    return env


def _run(env: dict[str, str], *argv: str) -> float:
    start = time.perf_counter()
    subprocess.run([*WALLETCTL, *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="transactions to seed")
    parser.add_argument("--sample", type=int, default=20,
                        help="transactions made one by one for the comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="walletctl-seed-bench-") as tmp:
        config = Path(tmp) / "profiles.toml"
        ready = Path(tmp) / "ready"
        env = _env(config)
        server = subprocess.Popen(
            [*WALLETCTL, "sandbox", "serve", "--port", "0", "--quiet", "--ready-file",
             str(ready), "--write-profile", "bench"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not ready.exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("sandbox serve did not start")
                time.sleep(0.05)
            csv_path = Path(tmp) / "seed.csv"
            seed_s = _run(env, "-p", "bench", "sandbox", "seed", str(args.n), "--csv",
                          str(csv_path))
            one_by_one = 0.0
            for n in range(args.sample):
                ref = f"ONE-{n:04}"
                one_by_one += _run(env, "-p", "bench", "checkout", "--amount", "10.00",
                                   "--currency", "EUR", "--ref", ref, "--type", "preauth")
                one_by_one += _run(env, "-p", "bench", "sandbox", "approve", ref)
            batch_s = _run(env, "-p", "bench", "capture", "--batch", str(csv_path), "--yes")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=20)
    per_seed = seed_s / args.n
    per_one = one_by_one / args.sample
    print(f"sandbox seed {args.n:,}:          {seed_s:6.2f} s  "
          f"({'meets' if seed_s * 1000 / args.n < 10 else 'MISSES'} the target: 1,000 in "
          f"under 10 s)")
    print(f"checkout + approve, one by one: {per_one * 1000:6.0f} ms per transaction "
          f"({args.sample} made; {per_one * args.n:,.0f} s for {args.n:,})")
    print(f"ratio one-by-one / seed:        {per_one / per_seed:6.0f}x")
    print(f"capture --batch over the CSV:   {batch_s:6.2f} s  ({args.n / batch_s:,.0f} rows/s)")


if __name__ == "__main__":
    main()
