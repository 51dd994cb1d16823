"""The cost the money protocol adds to a single refund, measured in one interleaved run.

    python benchmarks/history.py [--runs 200]

Each run refunds 1.00 EUR of its own approved sale on a real-port sandbox (in this process).
Runs alternate between the *bare* calls (the pre-flight lookup, the plan, the POST) and the
*protocol* ``walletctl refund`` goes through (``ops.money.followup.follow_up``: the
per-original lock, earlier intents resolved from the history, the likely-duplicate hold
against the gateway's records and the history, the intent committed before the POST and
completed after), so machine noise hits both alike. Prints the medians and their
difference; exits 1 when the median cost of the protocol exceeds 5 ms (the target).
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--prefill", type=int, default=10_000,
                        help="entries already in the history (its size matters)")
    args = parser.parse_args()

    from walletctl.client.gateway import GatewayClient
    from walletctl.config.profile import AuthSettings, Profile
    from walletctl.history import open_for
    from walletctl.ops.money.followup import Ask, Desk, follow_up
    from walletctl.ops.redirect import plan_followup
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    workdir = Path(tempfile.mkdtemp(prefix="walletctl-history-bench-"))
    os.environ["WALLETCTL_AUDIT_LOG"] = str(workdir / "history.sqlite3")
    key = "bench-key"
    with EmbeddedSandbox(SandboxConfig(quiet=True, api_key=key)) as sandbox:
        refs = [f"HB-{i}" for i in range(2 * args.runs + 20)]
        now = datetime.now(UTC)
        store = sandbox.store
        with store.atomic():
            for ref in refs:
                store.create_transaction(
                    merchant_id="M-1", store_id="S-1", reference=ref, kind="sale",
                    type_str="ecom.sale", amount=Decimal("10.00"), currency="EUR",
                    state="Approved", method="WalletV2", now=now)
        profile = Profile(name="bench", base_url=sandbox.url, merchant_id="M-1", store_id="S-1",
                          user_id="u", currency="EUR", auth=AuthSettings(key=key))

        from walletctl.history.recorder import now_utc
        from walletctl.history.sqlite import SqliteHistory
        from walletctl.history.store import Completion, Intent

        with SqliteHistory(workdir / "history.sqlite3") as prefilled:
            ids = prefilled.begin_many(
                Intent(time=now_utc(), os_user="u", host="h", profile="bench",
                       base_url=sandbox.url, operation=("refund", "capture")[i % 2],
                       original_ref=f"OLD-{i}", new_ref=f"OLD-{i}-REF1", amount="1.00",
                       currency="EUR") for i in range(args.prefill))
            prefilled.complete_many(
                (i, Completion(time=now_utc(), outcome="approved")) for i in ids)

        def refund(client: GatewayClient, ref: str, history: bool) -> float:
            started = time.perf_counter()
            if history:
                moved = follow_up(client, open_for(profile),
                                  Ask(op="refund", ref=ref, amount="1.00", reason="benchmark"),
                                  Desk(confirm=lambda _plan: None))
                assert moved.response is not None
                response = moved.response
            else:
                plan = plan_followup(client, "refund", ref, amount="1.00")
                response = client.followup(plan.request)
            assert response.state == "Approved", response
            return time.perf_counter() - started

        with GatewayClient(profile) as client:
            for ref in refs[:20]:  # warm-up: connections, imports, schema builds
                refund(client, ref, history=ref.endswith(("1", "3", "5", "7", "9")))
            times: dict[bool, list[float]] = {False: [], True: []}
            for i, ref in enumerate(refs[20:]):
                history = i % 2 == 1
                times[history].append(refund(client, ref, history))
    without = statistics.median(times[False]) * 1000
    with_history = statistics.median(times[True]) * 1000
    cost = with_history - without
    print(f"single refund, {args.runs} runs each, interleaved (in-process ops call), "
          f"history holding {args.prefill:,}+ entries")
    print(f"  bare lookup+POST median {without:7.2f} ms")
    print(f"  money protocol   median {with_history:7.2f} ms  (lock, earlier intents, "
          "duplicate hold, history)")
    print(f"  protocol cost    median {cost:7.2f} ms   (target <= {TARGET_MS:.0f} ms)"
          f"   ratio {with_history / without:.2f}x")
    return 0 if cost <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
