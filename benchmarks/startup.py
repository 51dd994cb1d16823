"""Start-up and lookup cost of walletctl, as ratios measured in one interleaved run.

    python benchmarks/startup.py [--runs 15]

Measures (medians of N runs, commands interleaved round-robin so machine noise hits all
of them alike):

* ``walletctl --version`` and ``walletctl --help`` as ratios to ``python -c pass``
  (target: --help <= 6x);
* ``walletctl lookup REF`` against a local sandbox as a ratio to a bare one-line httpx GET
  of the same URL (target <= 1.5x), and to httpie (``http``) when installed.

Prints a table and exits 1 when a target is missed. Not a test: shared machines are noisy,
so only ratios from one run are compared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
BIN = Path(PY).parent


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(
            f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n"
            f"{proc.stderr.decode(errors='replace')[-500:]}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    walletctl = str(BIN / "walletctl")
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb, tempfile.TemporaryDirectory() as tmp:
        import httpx

        headers = {"Authorization": "PublicApiKey sandbox-api-key"}
        body = {
            "merchantId": "M-BENCH",
            "storeId": "S-1",
            "userId": "bench",
            "type": "ecom.sale",
            "amount": "1234",
            "currencyCode": "EUR",
            "clientSystemTransactionId": "BENCH-1",
            "checkoutDetails": {"paymentMethod": "WalletV2"},
            "redirectDetails": {
                k: "https://shop.example/r"
                for k in ("returnUrl", "successUrl", "pendingUrl", "errorUrl", "cancelUrl",
                          "refusedUrl")
            },
        }
        httpx.post(sb.url + "/api/v5/checkout", json=body, headers=headers).raise_for_status()
        httpx.post(sb.url + "/_sandbox/checkouts/BENCH-1/approve").raise_for_status()
        url = (
            sb.url + "/api/v5/apmTransactions?merchantId=M-BENCH&storeId=S-1"
            "&clientSystemTransactionId=BENCH-1"
        )
        cfg = Path(tmp) / "profiles.toml"
        cfg.write_text(
            f'[profiles.bench]\nbase_url = "{sb.url}"\nmerchant_id = "M-BENCH"\n'
            'store_id = "S-1"\nuser_id = "bench"\n[profiles.bench.auth]\n'
            'scheme = "PublicApiKey"\nkey_env = "BENCH_KEY"\n'
        )
        cfg.chmod(0o600)
        env = {**os.environ, "BENCH_KEY": "sandbox-api-key", "NO_COLOR": "1"}
        one_liner = (
            "import httpx; httpx.get(" + repr(url) + ", headers={'Authorization': "
            "'PublicApiKey sandbox-api-key'}).raise_for_status()"
        )
        cases: dict[str, list[str]] = {
            "python -c pass": [PY, "-c", "pass"],
            "walletctl --version": [walletctl, "--version"],
            "walletctl --help": [walletctl, "--help"],
            "walletctl capture --help": [walletctl, "capture", "--help"],
            "httpx one-liner GET": [PY, "-c", one_liner],
            "walletctl lookup": [
                walletctl,
                "--config",
                str(cfg),
                "-p",
                "bench",
                "-o",
                "json",
                "lookup",
                "BENCH-1",
            ],
        }
        if shutil.which("http"):
            cases["httpie GET"] = [
                "http",
                "--ignore-stdin",
                "GET",
                url,
                "Authorization:PublicApiKey sandbox-api-key",
            ]
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for cmd in cases.values():  # warm-up (page cache, .pyc)
            _timed(cmd, env)
        for _ in range(args.runs):
            for name, cmd in cases.items():
                samples[name].append(_timed(cmd, env))
    med = {name: statistics.median(v) * 1000 for name, v in samples.items()}
    base = med["python -c pass"]
    bare = med["httpx one-liner GET"]
    print(f"{'case':28} {'median ms':>10} {'ratio':>8}  baseline")
    for name, ms in med.items():
        if name.startswith("walletctl lookup") or name.startswith("httpie"):
            print(f"{name:28} {ms:10.1f} {ms / bare:8.2f}  httpx one-liner")
        else:
            print(f"{name:28} {ms:10.1f} {ms / base:8.2f}  python -c pass")
    checks = {
        "--help <= 6x python -c pass": med["walletctl --help"] / base <= 6.0,
        "lookup <= 1.5x httpx one-liner": med["walletctl lookup"] / bare <= 1.5,
    }
    for text, ok in checks.items():
        print(f"target {text}: {'met' if ok else 'MISSED'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
