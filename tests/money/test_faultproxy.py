"""The fault proxy's own behaviour, proven against walletctl and the sandbox as they are today.

These pass on the current code: each knob is shown to do what the protocol tests rely on, from
the gateway's own records (never from walletctl's word alone).
"""

from __future__ import annotations

from typing import Any

from .conftest import Desk, unique


def test_pass_through_lookup_matches_the_gateway(desk: Desk) -> None:
    ref = desk.sale(unique("PT"), "12.00")
    through = desk.run("-p", "desk-a", "-o", "json", "lookup", ref, expect=0).json()
    localhost = desk.run("-p", "desk-b", "-o", "json", "lookup", ref, expect=0).json()
    direct = desk.run("-p", "sbx", "-o", "json", "lookup", ref, expect=0).json()
    assert through == direct == localhost, (through, direct, localhost)
    assert [r["transactionAmount"] for r in through] == ["12.00"]
    gets = [r for r in desk.proxy.requests if r.method == "GET"]
    assert len(gets) == 2, desk.proxy.requests
    assert all(f"clientSystemTransactionId={ref}" in r.query for r in gets), gets


def test_pass_through_capture_moves_money_once(desk: Desk) -> None:
    ref = desk.preauth(unique("PTC"), "40.00")
    res = desk.run("-p", "desk-a", "capture", ref, "--amount", "15", "--yes", expect=0)
    assert res.json()["clientSystemTransactionId"] == f"{ref}-CAP1", res
    posts = desk.proxy.posts()
    assert len(posts) == 1, desk.proxy.requests
    assert posts[0].body["type"] == "ecom.capture", posts[0]
    assert posts[0].body["amount"] == "1500", posts[0]
    caps = desk.followups(ref, "capture")
    assert [(c["clientSystemTransactionId"], c["transactionAmount"]) for c in caps] == [
        (f"{ref}-CAP1", 1500)], caps


def test_drop_after_forward_commits_then_drops(desk: Desk) -> None:
    ref = desk.preauth(unique("DROP"), "40.00")
    desk.proxy.drop_after_forward(method="POST", times=1)
    res = desk.run("-p", "desk-a", "capture", ref, "--yes")
    # The client saw the connection drop after sending: an unknown outcome (exit 8), unless
    # its own lookup afterwards found the capture (exit 0, saying so).
    assert res.code in (0, 8), f"a dropped answer is exit 8, or 0 once found by lookup{res}"
    assert f"{ref}-CAP1" in res.stderr, res
    if res.code == 8:
        assert "unknown outcome" in res.stderr, res
    assert len(desk.proxy.posts()) == 1, desk.proxy.requests
    caps = desk.followups(ref, "capture")
    assert [(c["clientSystemTransactionId"], c["state"], c["transactionAmount"])
            for c in caps] == [(f"{ref}-CAP1", "Approved", 4000)], caps
    # times=1: the next POST passes.
    other = desk.preauth(unique("DROP2"), "10.00")
    desk.run("-p", "desk-a", "capture", other, "--yes", expect=0)
    assert len(desk.followups(other, "capture")) == 1


def test_drop_with_blackout_leaves_the_outcome_unknown(desk: Desk) -> None:
    ref = desk.preauth(unique("BLK"), "40.00")
    desk.proxy.drop_after_forward(method="POST", times=1, blackout=True)
    res = desk.run("-p", "desk-a", "capture", ref, "--amount", "15", "--yes", expect=8)
    assert "unknown outcome" in res.stderr, res
    assert f"{ref}-CAP1" in res.stderr, res
    assert len(desk.proxy.posts()) == 1, desk.proxy.requests
    assert [(c["clientSystemTransactionId"], c["transactionAmount"])
            for c in desk.followups(ref, "capture")] == [(f"{ref}-CAP1", 1500)]
    # Blacked out until clear(): answered 503 without reaching the sandbox.
    desk.run("-p", "desk-a", "lookup", ref, expect=6)
    assert [r.method for r in desk.proxy.refused] == ["GET"], desk.proxy.refused
    forwarded = len(desk.proxy.requests)
    desk.proxy.clear()
    desk.run("-p", "desk-a", "-o", "json", "lookup", ref, expect=0)
    assert len(desk.proxy.requests) == forwarded + 1


def test_status_after_forward_answers_429_yet_the_gateway_applied_it(desk: Desk) -> None:
    ref = desk.sale(unique("S429"), "50.00")
    desk.proxy.status_after_forward(429, times=1, headers={"Retry-After": "0"})
    res = desk.run("-p", "desk-a", "refund", ref, "--amount", "5", "--yes")
    # 6: taken as a refusal to serve (walletctl before the protocol change); 0: looked up
    # and found; 8: unknown. Whatever walletctl says, the gateway applied it.
    assert res.code in (0, 6, 8), res
    if res.code == 6:
        assert "429" in res.stderr or "rate" in res.stderr.lower(), res
    assert len(desk.proxy.posts()) == 1, desk.proxy.requests
    refunds = desk.followups(ref, "refund")
    assert [(r["clientSystemTransactionId"], r["transactionAmount"]) for r in refunds] == [
        (f"{ref}-REF1", 500)], refunds


def test_rewrite_lookup_changes_what_the_gateway_shows(desk: Desk) -> None:
    ref = desk.sale(unique("RWL"), "50.00")

    def bigger(records: Any) -> Any:
        for rec in records:
            if rec["clientSystemTransactionId"] == ref:
                rec["transactionAmount"] = 7000
        return records

    desk.proxy.rewrite_lookup(bigger)
    shown = desk.run("-p", "desk-a", "-o", "json", "lookup", ref, expect=0).json()
    assert [r["transactionAmount"] for r in shown] == ["70.00"], shown
    direct = desk.run("-p", "sbx", "-o", "json", "lookup", ref, expect=0).json()
    assert [r["transactionAmount"] for r in direct] == ["50.00"], direct


def test_rewrite_request_changes_what_the_gateway_receives(desk: Desk) -> None:
    ref = desk.sale(unique("RWR"), "50.00")

    def six_euros(body: Any) -> Any:
        body["amount"] = "600"
        return body

    desk.proxy.rewrite_request(six_euros)
    res = desk.run("-p", "desk-a", "refund", ref, "--amount", "5", "--yes")
    # The sandbox's answer does not echo the amount, so walletctl cannot tell (exit 0 today).
    assert res.code in (0, 8), res
    refunds = desk.followups(ref, "refund")
    assert [r["transactionAmount"] for r in refunds] == [600], refunds
    assert desk.proxy.posts()[0].body["amount"] == "600"


def test_latency_delays_the_answer(desk: Desk) -> None:
    import time

    ref = desk.sale(unique("LAT"), "50.00")
    desk.proxy.latency(1.0, after_forward=True)
    start = time.monotonic()
    desk.run("-p", "desk-a", "refund", ref, "--amount", "5", "--yes", expect=0)
    assert time.monotonic() - start >= 1.0
    assert len(desk.followups(ref, "refund")) == 1
