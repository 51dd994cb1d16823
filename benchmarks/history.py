"""The cost the money protocol adds to a single refund, measured in one interleaved run.

    python benchmarks/history.py [--runs 200] [--no-postgres]

Each run refunds 1.00 EUR of its own approved sale on a real-port sandbox (in this process).
Runs alternate between the *bare* calls (the pre-flight lookup, the plan, the POST) and the
*protocol* ``walletctl refund`` goes through (``ops.money.pipeline.move``: the
per-original lock, earlier intents resolved from the history, the likely-duplicate hold
against the gateway's records and the history, the intent committed before the POST and
completed after), so machine noise hits both alike. The protocol runs twice over: with the
local SQLite history, and with a shared history on a PostgreSQL server over loopback (the
tests' own throwaway cluster, as operator ``alice``: a new connection per refund, as a
command pays it). Prints the medians and their differences; exits 1 when the median cost
exceeds 5 ms on SQLite or 10 ms on PostgreSQL (the targets).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

TARGET_MS = 5.0
TARGET_PG_MS = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--prefill", type=int, default=10_000,
                        help="entries already in the history (its size matters)")
    parser.add_argument("--processes", type=int, default=30,
                        help="whole walletctl refund processes per history")
    parser.add_argument("--no-postgres", action="store_true",
                        help="skip the shared history (no PostgreSQL server here)")
    args = parser.parse_args()
    # removed on the way out, whatever happens: it holds the cluster's .pgpass
    with tempfile.TemporaryDirectory(prefix="walletctl-history-bench-") as scratch:
        workdir = Path(scratch)
        if args.no_postgres:
            return measure(args, workdir, None)
        sys.path.insert(0, str(Path(__file__).parent))
        from pg_server import shared_history

        with shared_history(workdir) as (url, env):
            os.environ.update(env)
            return measure(args, workdir, url)


def measure(args: argparse.Namespace, workdir: Path, pg_url: str | None) -> int:

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.dburl import parse_db_url
    from walletctl.config.profile import AuthSettings, Profile
    from walletctl.history import open_history, open_shared
    from walletctl.ops.money.movements import follow_up
    from walletctl.ops.money.pipeline import Ask, Desk
    from walletctl.ops.redirect import plan_followup
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    key = "bench-key"
    arms = ["bare", "sqlite"] + (["postgresql"] if pg_url else [])
    with EmbeddedSandbox(SandboxConfig(quiet=True, api_key=key)) as sandbox:
        refs = [f"HB-{i}" for i in range(len(arms) * (args.runs + 10))]
        cli_refs = [f"HC-{i}" for i in range(2 * (args.processes + 2))] if pg_url else []
        now = datetime.now(UTC)
        store = sandbox.store
        with store.atomic():
            for ref in refs + cli_refs:
                store.create_transaction(
                    merchant_id="M-1", store_id="S-1", reference=ref, kind="sale",
                    type_str="ecom.sale", amount=Decimal("10.00"), currency="EUR",
                    state="Approved", method="WalletV2", now=now)
        profile = Profile(name="bench", base_url=sandbox.url, merchant_id="M-1", store_id="S-1",
                          user_id="u", currency="EUR", auth=AuthSettings(key=key))

        from walletctl.history.sqlite import SqliteHistory
        from walletctl.history.store import Completion, HistoryStore, Intent
        from walletctl.models.entries import now_utc

        stores: list[HistoryStore] = [SqliteHistory(workdir / "history.sqlite3")]
        if pg_url:
            stores.append(open_shared(parse_db_url(pg_url)))
        for prefilled in stores:
            with prefilled:
                ids = prefilled.begin_many(
                    Intent(time=now_utc(), os_user="u", host="h", profile="bench",
                           base_url=sandbox.url, operation=("refund", "capture")[i % 2],
                           original_ref=f"OLD-{i}", new_ref=f"OLD-{i}-REF1", amount="1.00",
                           currency="EUR") for i in range(args.prefill))
                prefilled.complete_many(
                    (i, Completion(time=now_utc(), outcome="approved")) for i in ids)

        def opened(arm: str) -> HistoryStore:
            if arm == "postgresql" and pg_url:
                return open_shared(parse_db_url(pg_url), purpose="walletctl refund bench")
            return open_history(workdir / "history.sqlite3")

        def refund(client: GatewayClient, ref: str, arm: str) -> float:
            started = time.perf_counter()
            if arm != "bare":
                moved = follow_up(client, opened(arm),
                                  Ask(op="refund", ref=ref, amount="1.00", reason="benchmark"),
                                  Desk(confirm=lambda _plan: None))
                assert moved.answer is not None
                response = moved.answer
            else:
                plan = plan_followup(client, "refund", ref, amount="1.00")
                response = client.followup(plan.request)
            assert response.state == "Approved", response
            return time.perf_counter() - started

        warm = len(arms) * 10
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        with GatewayClient(profile) as client:
            for i, ref in enumerate(refs[:warm]):  # warm-up: connections, imports, schemas
                refund(client, ref, arms[i % len(arms)])
            for i, ref in enumerate(refs[warm:]):
                arm = arms[i % len(arms)]
                times[arm].append(refund(client, ref, arm))
        whole = commands(args, workdir, sandbox.url, key, cli_refs, pg_url) if pg_url else None
    median = {arm: statistics.median(t) * 1000 for arm, t in times.items()}
    bare = median["bare"]
    print(f"single refund, {args.runs} runs each, interleaved (in-process ops call), "
          f"each history holding {args.prefill:,}+ entries")
    print(f"  bare lookup+POST median {bare:7.2f} ms")
    ok = True
    for arm, target in (("sqlite", TARGET_MS), ("postgresql", TARGET_PG_MS)):
        if arm not in median:
            continue
        cost = median[arm] - bare
        ok = ok and cost <= target
        print(f"  protocol, {arm:<10} median {median[arm]:7.2f} ms, cost {cost:6.2f} ms "
              f"(target <= {target:.0f} ms)   ratio {median[arm] / bare:.2f}x")
    if whole is not None:
        local, shared = whole
        print(f"whole `walletctl refund` processes, {args.processes} each, interleaved: "
              f"SQLite median {local:.1f} ms, PostgreSQL median {shared:.1f} ms, "
              f"difference {shared - local:+.1f} ms (the connection overlaps the start-up)")
    return 0 if ok else 1


def commands(args: argparse.Namespace, workdir: Path, url: str, key: str, refs: list[str],
             pg_url: str) -> tuple[float, float]:
    """Median wall time of whole ``walletctl refund`` processes with each history."""
    import subprocess

    config = workdir / "profiles.toml"
    config.write_text(f'default_profile = "bench"\n[profiles.bench]\nbase_url = "{url}"\n'
                      'merchant_id = "M-1"\nstore_id = "S-1"\nuser_id = "u"\n'
                      f'currency = "EUR"\n[profiles.bench.auth]\nkey = "{key}"\n')
    config.chmod(0o600)
    base = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    base.update(WALLETCTL_CONFIG=str(config), NO_COLOR="1")
    envs = {"sqlite": {**base, "WALLETCTL_AUDIT_LOG": str(workdir / "cli.sqlite3")},
            "postgresql": {**base, "WALLETCTL_HISTORY_URL": pg_url}}
    times: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    for i, ref in enumerate(refs):
        arm = ("sqlite", "postgresql")[i % 2]
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "walletctl", "-o", "json", "refund", ref,
                        "--amount", "1.00", "--yes"], env=envs[arm], check=True,
                       capture_output=True)
        if i >= 4:  # the first two of each warm the caches
            times[arm].append(time.perf_counter() - started)
    return (statistics.median(times["sqlite"]) * 1000,
            statistics.median(times["postgresql"]) * 1000)


if __name__ == "__main__":
    sys.exit(main())
