"""The runner against a fake gateway that never deduplicates: exactly-once must come from
walletctl (journal + lookup before retry), not from the server."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest
from batch_fakes import FakeGateway, Faults

from walletctl.errors import GatewayError
from walletctl.models.records import TransactionRecord
from walletctl.ops.batch.journal import Journal, plan_batch
from walletctl.ops.batch.runner import BatchRunner, RowResult, RunOptions, RunReport

FAST = {"backoff_initial": 0.001, "backoff_max": 0.005, "settle": 0.0}
_OPEN: list[Journal] = []


def make_input(tmp_path: Path, rows: list[tuple[str, str]]) -> Path:
    path = tmp_path / "in.csv"
    path.write_text("ref,amount,currency\n" + "".join(f"{r},{a},EUR\n" for r, a in rows))
    return path


def run(
    tmp_path: Path, gw: FakeGateway, rows: list[tuple[str, str]], *, op: str = "capture",
    batch_id: str = "batch0001", **opts: object,
) -> tuple[RunReport, list[RowResult], Journal]:
    src = make_input(tmp_path, rows)
    while _OPEN:  # a journal is locked while open: an earlier run of this test ends first
        _OPEN.pop().close()
    jr = Journal(tmp_path / "j.sqlite", batch_id=batch_id, op=op, source=str(src))  # type: ignore[arg-type]
    _OPEN.append(jr)
    plan_batch(src, jr)
    results: list[RowResult] = []
    options = RunOptions(op=op, **{**FAST, **opts})  # type: ignore[arg-type]
    runner = BatchRunner(jr, lambda name: gw, options, on_result=results.append)
    report = asyncio.run(runner.run())
    return report, results, jr


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "full-preflight"])
def test_faults_never_apply_a_row_twice_and_leave_no_gap(tmp_path: Path, direct: bool) -> None:
    gw = FakeGateway(Faults(connect_error=0.1, error_before=0.15, error_after=0.1,
                            drop_after=0.1, throttle=0.1, lookup_error=0.1), seed=11)
    refs = [f"PA{i}" for i in range(300)]
    for ref in refs:
        gw.add_preauth(ref, "10.00")
    report, results, jr = run(tmp_path, gw, [(r, "4.00") for r in refs], concurrency=16,
                              direct=direct)
    assert report.events.get("direct", 0) == (300 if direct else 0)
    applied = gw.applications()
    assert report.counts["confirmed"] == 300, report
    assert len(applied) == 300, len(applied)
    assert max(applied.values()) == 1, applied.most_common(3)
    # faults really happened: some references were POSTed more than once (proven absent first)
    assert any(n > 1 for n in gw.posts.values())
    assert jr.counts()["confirmed"] == 300
    assert len({r.line for r in results}) == 300 == len(results)


def test_lookup_before_resend_after_commit_then_drop(tmp_path: Path) -> None:
    gw = FakeGateway(Faults(drop_after=1.0))
    gw.add_preauth("PA1", "10.00")
    report, results, _ = run(tmp_path, gw, [("PA1", "10.00")])
    assert gw.posts.most_common(1)[0][1] == 1, "re-sent without looking up first"
    assert report.counts["confirmed"] == 1
    assert results[0].status == "confirmed"
    assert results[0].txn_id is not None


def test_preflight_counts_earlier_rows_on_the_same_original(tmp_path: Path) -> None:
    gw = FakeGateway()
    gw.add_preauth("PA1", "10.00")
    gw.add_preauth("PA2", "10.00")
    rows = [("PA1", "6.00"), ("PA1", "4.00"), ("PA1", "0.01"), ("PA2", "10.01")]
    report, results, _ = run(tmp_path, gw, rows, concurrency=8)
    by_line = {r.line: r for r in results}
    assert [by_line[n].status for n in (2, 3, 4, 5)] == [
        "confirmed", "confirmed", "refused", "refused"], [r.as_dict() for r in results]
    assert "fully captured" in (by_line[4].detail or "")
    assert "exceeds the remaining authorised" in (by_line[5].detail or "")
    assert report.counts == {"confirmed": 2, "refused": 2, "unknown": 0, "pending": 0}
    assert sum(r.transaction_amount for r in gw.applied if r.client_system_invoice_id) == \
        Decimal("10.00")


def test_unknown_original_is_refused_by_preflight(tmp_path: Path) -> None:
    gw = FakeGateway()
    _report, results, _ = run(tmp_path, gw, [("NOPE", "1.00")], direct=False)
    assert results[0].status == "refused"
    assert "no sale or pre-authorisation" in (results[0].detail or "")
    assert not gw.posts


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "full-preflight"])
def test_resume_skips_confirmed_rows_and_sends_nothing_again(
    tmp_path: Path, direct: bool
) -> None:
    gw = FakeGateway()
    for i in range(20):
        gw.add_preauth(f"PA{i}", "5.00")
    rows = [(f"PA{i}", "5.00") for i in range(20)]
    run(tmp_path, gw, rows, direct=direct)
    posts = sum(gw.posts.values())
    report, results, _ = run(tmp_path, gw, rows, direct=direct)
    assert sum(gw.posts.values()) == posts, "a resumed run re-sent confirmed rows"
    assert report.earlier == 20
    assert all(r.earlier_run for r in results)


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "full-preflight"])
def test_resume_reconciles_a_row_left_sent_by_a_killed_run(
    tmp_path: Path, direct: bool
) -> None:
    gw = FakeGateway()
    gw.add_preauth("PA1", "5.00")
    gw.add_preauth("PA2", "5.00")
    src = make_input(tmp_path, [("PA1", "5.00"), ("PA2", "5.00")])
    jr = Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x")
    plan_batch(src, jr)
    rows = list(jr.rows())
    # A killed run: PA1 was sent and applied, PA2 marked sent but never left the process.
    jr.mark_sent_many([rows[0].key])
    jr.mark_sent_many([rows[1].key])
    req_ref = rows[0].new_ref
    from walletctl.models.records import TransactionRecord

    gw.applied.append(TransactionRecord(
        id="x1", state="Approved", currency_code="EUR", transaction_amount=Decimal("5.00"),
        client_system_transaction_id=req_ref, client_system_invoice_id="PA1",
        type="ecom.capture"))
    jr.close()
    report, _results, _jr2 = run(tmp_path, gw, [("PA1", "5.00"), ("PA2", "5.00")],
                                 direct=direct)
    assert report.events.get("direct", 0) == 0, "a row with journal history skipped the lookup"
    assert gw.posts[req_ref] == 0, "the applied row was re-sent"
    assert gw.posts[rows[1].new_ref] == 1
    assert max(gw.applications().values()) == 1
    assert report.counts["confirmed"] == 2


def test_breaker_opens_and_reports_what_is_left(tmp_path: Path) -> None:
    gw = FakeGateway(Faults(always_fail=True))
    for i in range(50):
        gw.add_preauth(f"PA{i}", "5.00")
    report, _results, jr = run(tmp_path, gw, [(f"PA{i}", "5.00") for i in range(50)],
                              max_failures=3, max_attempts=2, concurrency=2)
    assert report.breaker_open
    assert report.counts["pending"] >= 40, report.counts
    assert report.counts["confirmed"] == 0
    assert jr.counts()["planned"] == 50 - report.counts["unknown"]


def test_auth_failure_stops_the_batch(tmp_path: Path) -> None:
    gw = FakeGateway(Faults(auth_fail=True))
    for i in range(30):
        gw.add_preauth(f"PA{i}", "5.00")
    report, _, _ = run(tmp_path, gw, [(f"PA{i}", "5.00") for i in range(30)], concurrency=4)
    assert report.fatal is not None
    assert report.fatal_code == 9
    assert report.counts["pending"] == 30
    assert gw.lookups <= 4, "kept calling a gateway that refuses our credentials"


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    gw = FakeGateway()
    for i in range(100):
        gw.add_preauth(f"PA{i}", "5.00")
    run(tmp_path, gw, [(f"PA{i}", "5.00") for i in range(100)], concurrency=5)
    assert 1 < gw.max_in_flight <= 5


def test_stop_leaves_a_resumable_journal(tmp_path: Path) -> None:
    gw = FakeGateway()
    for i in range(100):
        gw.add_preauth(f"PA{i}", "5.00")
    rows = [(f"PA{i}", "5.00") for i in range(100)]
    src = make_input(tmp_path, rows)
    jr = Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x")
    plan_batch(src, jr)
    results: list[RowResult] = []
    runner: BatchRunner

    def on_result(r: RowResult) -> None:
        results.append(r)
        if len(results) == 10:
            runner.stop()

    runner = BatchRunner(jr, lambda n: gw, RunOptions(op="capture", concurrency=4, **FAST),  # type: ignore[arg-type]
                         on_result=on_result)
    report = asyncio.run(runner.run())
    assert report.interrupted
    assert 10 <= report.counts["confirmed"] < 100
    assert report.counts["pending"] == 100 - report.counts["confirmed"]
    jr.close()
    report2, _, _ = run(tmp_path, gw, rows)
    assert report2.counts["confirmed"] == 100
    assert len(gw.applications()) == 100
    assert max(gw.applications().values()) == 1


@pytest.mark.parametrize("op", ["refund", "reverse"])
def test_refund_and_reverse_use_their_rules(tmp_path: Path, op: str) -> None:
    gw = FakeGateway()
    gw.add_preauth("SALE1", "8.00", kind="ecom.sale")
    gw.add_preauth("PRE1", "8.00")
    _report, results, _ = run(tmp_path, gw, [("SALE1", "8.00"), ("PRE1", "8.00")], op=op)
    status = {r.ref: r.status for r in results}
    if op == "refund":
        assert status == {"SALE1": "confirmed", "PRE1": "refused"}  # nothing captured on PRE1
    else:
        assert status == {"SALE1": "refused", "PRE1": "confirmed"}  # a sale cannot be reversed


class _BlindAfterSend(FakeGateway):
    """Drops every answer after commit, then cannot be looked up: outcome stays unknown."""

    async def lookup(self, reference: str) -> list[TransactionRecord]:
        if self.posts:
            raise GatewayError(503, description="ServiceUnavailable")
        return await super().lookup(reference)


def test_unreconcilable_rows_are_unknown_and_resume_settles_them(tmp_path: Path) -> None:
    gw = _BlindAfterSend(Faults(drop_after=1.0))
    gw.add_preauth("PA1", "5.00")
    report, results, jr = run(tmp_path, gw, [("PA1", "5.00")], max_attempts=2)
    assert report.counts["unknown"] == 1, report.counts
    assert results[0].status == "unknown"
    assert "kept failing" in (results[0].detail or "")
    assert jr.counts()["unknown"] == 1
    assert gw.posts.total() == 1, "re-sent a row whose outcome was unknown"
    jr.close()
    healthy = FakeGateway(applied=gw.applied, originals=gw.originals)
    _, results2, _ = run(tmp_path, healthy, [("PA1", "5.00")])
    assert results2[0].status == "confirmed"
    assert healthy.posts.total() == 0, "resume re-sent instead of reconciling by lookup"
    assert max(healthy.applications().values()) == 1


def test_preflight_refusals_are_checked_again_on_resume(tmp_path: Path) -> None:
    gw = FakeGateway()
    gw.add_preauth("PA1", "5.00", state="Pending")
    _, results, jr = run(tmp_path, gw, [("PA1", "5.00")], direct=False)
    assert results[0].status == "refused"
    assert (results[0].detail or "").startswith("pre-flight:")
    jr.close()
    gw.applied[0] = gw.applied[0].model_copy(update={"state": "Approved"})  # approved since
    _, results, _ = run(tmp_path, gw, [("PA1", "5.00")])  # re-checked: by the full path
    assert results[0].status == "confirmed"
    assert not results[0].earlier_run
    assert gw.posts.total() == 1


def test_direct_rows_take_one_round_trip_shared_originals_take_two(tmp_path: Path) -> None:
    gw = FakeGateway()
    for i in range(10):
        gw.add_preauth(f"PA{i}", "10.00")
    rows = [(f"PA{i}", "5.00") for i in range(10)] + [("PA0", "5.00")]  # PA0 named twice
    report, _results, _ = run(tmp_path, gw, rows)
    assert report.counts["confirmed"] == 11
    assert report.events["direct"] == 9
    assert gw.lookups == 2, "only the two rows on PA0 need a lookup"
    assert report.requests == 11 + 2


def test_direct_row_refused_by_the_gateway_is_recorded_and_never_resent(tmp_path: Path) -> None:
    gw = FakeGateway()
    gw.add_preauth("PA1", "10.00")
    report, results, jr = run(tmp_path, gw, [("PA1", "10.01")])
    assert report.events["direct"] == 1
    assert gw.lookups == 0
    assert results[0].status == "refused"
    detail = results[0].detail or ""
    assert detail.startswith("gateway: ")
    assert "exceeds the remaining authorised" in detail
    row = jr.get("PA1#0")
    assert row is not None
    assert row.state == "refused"
    assert row.detail == detail
    jr.close()
    for _ in range(2):  # re-runs: the refusal is final, nothing is sent again
        _report2, results2, jr2 = run(tmp_path, gw, [("PA1", "10.01")])
        jr2.close()
        assert results2[0].status == "refused"
        assert results2[0].earlier_run
    assert gw.posts.total() == 1
    assert gw.refusals.total() == 1
    assert not gw.applications()


def test_unreachable_gateway_stops_the_batch_at_once(tmp_path: Path) -> None:
    gw = FakeGateway(Faults(connect_error=1.0))
    for i in range(50):
        gw.add_preauth(f"PA{i}", "5.00")
    report, _results, jr = run(tmp_path, gw, [(f"PA{i}", "5.00") for i in range(50)],
                              concurrency=4)
    assert report.fatal == "could not connect"
    assert report.fatal_code == 7
    assert gw.posts.total() <= 4 * 3, "kept knocking on an unreachable gateway"
    assert report.counts["pending"] == 50
    assert jr.counts()["sent"] == 0
