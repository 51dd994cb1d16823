"""Input validation messages, journal states and references, Retry-After, token bucket,
circuit breaker."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime
from pathlib import Path

import pytest
from batch_fakes import PROFILE

from walletctl.client.gateway import parse_retry_after
from walletctl.errors import UsageError
from walletctl.ops.batch.flow import CircuitBreaker, TokenBucket
from walletctl.ops.batch.input_rows import Problem, Row, iter_rows
from walletctl.ops.batch.journal import (
    BatchValidationError,
    Journal,
    default_batch_id,
    derive_reference,
    plan_batch,
)


def problems(path: Path, default_currency: str | None = "EUR") -> list[str]:
    return [str(p) for p in iter_rows(path, default_currency=default_currency)
            if isinstance(p, Problem)]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- input -----------------------------------------------------------------------------------
def test_csv_rows_are_parsed_with_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "in.csv", "ref,amount,currency,new_ref\nA1,12.34,eur,\n\nA2,5,JPY,X-2\n")
    rows = list(iter_rows(path))
    assert rows == [Row(2, "A1", Decimal("12.34"), "EUR"), Row(4, "A2", Decimal(5), "JPY", "X-2")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ref,amount\nA1,12.345\n", "line 2: amount: EUR amounts have 2 decimal places"),
        ("ref,amount\nA1,-1\n", "line 2: amount: must be greater than zero"),
        ("ref,amount\nA1,abc\n", "line 2: amount: 'abc' is not a number"),
        ("ref,amount\n,1\n", "line 2: ref: is required"),
        ("ref,amount\nA\t1,1\n", "line 2: ref: has U+0009 at character 2; a reference must be "
                                 "1-64 printable characters"),
        ("ref,amount\n A1,1\n", "line 2: ref: starts with a space"),
        ("ref,amount,currency\nA1,1,EURO\n", "line 2: currency: must be an ISO 4217"),
        ("ref,amount,currency\nA1,1,XAU\n", "line 2: currency: XAU has no minor unit"),
        ("ref,amount\nA1,1,3\n", "line 2: (row): has 3 fields, the header has 2"),
        ("ref,amout\nA1,1\n", "line 1: column 'amout': unknown column"),
        ("ref,currency\nA1,EUR\n", "line 1: column 'amount': is required in the header row"),
        ("ref,amount,new_ref\nA1,1,A1\n", "line 2: new_ref: must differ from ref"),
        ("ref,amount,profile\nA1,1,no spaces\n", "line 2: profile: must be a profile name"),
    ],
)
def test_csv_problems_name_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(write(tmp_path, "in.csv", text))
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_currency_falls_back_to_the_profile_or_is_required(tmp_path: Path) -> None:
    path = write(tmp_path, "in.csv", "ref,amount\nA1,1.00\n")
    first = next(iter(iter_rows(path, default_currency="GBP")))
    assert first == Row(2, "A1", Decimal("1.00"), "GBP")
    assert problems(path, None) == [
        "line 2: currency: is required (no currency column value and no profile currency)"]


def test_jsonl_rows_and_problems(tmp_path: Path) -> None:
    path = write(tmp_path, "in.jsonl", "\n".join([
        '{"ref": "A1", "amount": "1.50", "currency": "EUR"}',
        '{"ref": "A2", "amount": 2, "currency": "EUR", "new_ref": "N2"}',
        "",
        '{"ref": "A3", "amount": 1.005, "currency": "EUR"}',
        "[1, 2]",
        '{"ref": "A5", "amont": "1"}',
        "{not json",
    ]) + "\n")
    items = list(iter_rows(path))
    assert items[0] == Row(1, "A1", Decimal("1.50"), "EUR")
    assert items[1] == Row(2, "A2", Decimal(2), "EUR", "N2")
    assert [str(p) for p in items[2:]] == [
        "line 4: amount: EUR amounts have 2 decimal places",
        "line 5: (row): must be a JSON object",
        "line 6: amont: is not a batch field (expected ref, amount, currency, new_ref, profile)",
        "line 7: (row): not valid JSON (Expecting property name enclosed in double quotes)",
    ]


def test_format_is_sniffed_without_a_known_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "rows.txt", '{"ref": "A1", "amount": "1", "currency": "EUR"}\n')
    assert list(iter_rows(path)) == [Row(1, "A1", Decimal(1), "EUR")]


# ---- journal ---------------------------------------------------------------------------------
def journal(tmp_path: Path, batch_id: str = "batch0001") -> Journal:
    return Journal(tmp_path / "j.sqlite", batch_id=batch_id, op="capture", source="in.csv")


def test_references_are_deterministic_and_distinct() -> None:
    a = derive_reference("b1", "capture", "PA1", 0)
    assert a == derive_reference("b1", "capture", "PA1", 0)
    others = {
        derive_reference("b1", "capture", "PA1", 1), derive_reference("b1", "refund", "PA1", 0),
        derive_reference("b2", "capture", "PA1", 0), derive_reference("b1", "capture", "PA2", 0),
    }
    assert a not in others
    assert len(others) == 4
    assert len(a) <= 64


def test_default_batch_id_from_path_or_content(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    assert default_batch_id("capture", p, None) == default_batch_id("capture", p, None)
    assert default_batch_id("capture", p, None) != default_batch_id("refund", p, None)
    assert default_batch_id("capture", None, "abc") != default_batch_id("capture", None, "abd")


def test_journal_state_transitions_and_wal(tmp_path: Path) -> None:
    jr = journal(tmp_path)
    src = write(tmp_path, "in.csv", "ref,amount\nPA1,1\nPA1,2\nPA2,3\n")
    plan = plan_batch(src, jr, default_currency="EUR")
    assert (plan.rows, plan.to_send, plan.totals) == (3, 3, {"EUR": Decimal(6)})
    rows = list(jr.rows())
    assert [r.key for r in rows] == ["PA1#0", "PA1#1", "PA2#0"]
    assert [r.state for r in rows] == ["planned"] * 3
    jr.mark_sent_many([rows[0].key])
    assert jr.get(rows[0].key).state == "sent"  # type: ignore[union-attr]
    jr.finish(rows[0].key, "unknown", detail="timeout")
    jr.mark_sent_many([rows[0].key])
    jr.finish(rows[0].key, "confirmed", txn_id="T1", txn_state="Approved")
    jr.finish(rows[1].key, "refused", detail="pre-flight")
    got = jr.get(rows[0].key)
    assert got is not None
    assert (got.state, got.attempts, got.txn_id) == ("confirmed", 2, "T1")
    assert jr.counts() == {"planned": 1, "sent": 0, "confirmed": 1, "refused": 1, "unknown": 0}
    # 'sent' is durable before the request leaves: another connection sees it (WAL). Outcomes
    # are group-committed (with the next send, or at the end): until then a crash leaves the
    # row 'sent', which a resume reconciles by lookup.
    other = sqlite3.connect(str(tmp_path / "j.sqlite"))
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert other.execute("SELECT state FROM rows WHERE key='PA1#0'").fetchone()[0] == "sent"
    jr.mark_sent_many([rows[2].key])  # the next send commits the outcomes recorded before it
    assert other.execute("SELECT state FROM rows WHERE key='PA1#0'").fetchone()[0] == "confirmed"
    assert other.execute("SELECT state FROM rows WHERE key='PA2#0'").fetchone()[0] == "sent"
    other.close()
    jr.close()


def test_rerun_after_editing_the_file_keeps_keys_and_references(tmp_path: Path) -> None:
    jr = journal(tmp_path)
    plan_batch(write(tmp_path, "in.csv", "ref,amount\nPA1,1\nPA2,2\n"), jr, default_currency="EUR")
    before = {r.key: r.new_ref for r in jr.rows()}
    jr.finish("PA2#0", "confirmed")
    jr.close()
    jr = journal(tmp_path)
    plan = plan_batch(write(tmp_path, "in.csv", "ref,amount\nPA0,5\nPA1,1\nPA2,2\n"), jr,
                      default_currency="EUR")
    after = {r.key: r.new_ref for r in jr.rows()}
    assert {k: after[k] for k in before} == before
    assert (plan.done_before, plan.to_send) == (1, 2)


def test_changed_amount_of_a_sent_row_is_refused(tmp_path: Path) -> None:
    jr = journal(tmp_path)
    plan_batch(write(tmp_path, "in.csv", "ref,amount\nPA1,1\n"), jr, default_currency="EUR")
    jr.mark_sent_many(["PA1#0"])
    jr.close()
    jr = journal(tmp_path)
    with pytest.raises(BatchValidationError) as info:
        plan_batch(write(tmp_path, "in.csv", "ref,amount\nPA1,2\n"), jr, default_currency="EUR")
    assert "line 2: amount: differs from what the journal recorded" in info.value.message


def test_invalid_rows_roll_back_the_whole_plan(tmp_path: Path) -> None:
    jr = journal(tmp_path)
    src = write(tmp_path, "in.csv", "ref,amount\nPA1,1\nPA2,x\nPA3,1\nPA4,0\n")
    with pytest.raises(BatchValidationError) as info:
        plan_batch(src, jr, default_currency="EUR")
    assert info.value.total == 2
    assert info.value.message.startswith("2 invalid rows in ")
    assert "line 3: amount: 'x' is not a number; line 5: amount: must be greater than zero" in \
        info.value.message
    assert list(jr.rows()) == []
    plan = plan_batch(src, jr, default_currency="EUR", skip_invalid=True)
    assert (plan.rows, plan.invalid) == (2, 2)


def test_duplicate_new_ref_is_reported_with_both_lines(tmp_path: Path) -> None:
    jr = journal(tmp_path)
    src = write(tmp_path, "in.csv", "ref,amount,new_ref\nPA1,1,N1\nPA2,1,N1\n")
    with pytest.raises(BatchValidationError) as info:
        plan_batch(src, jr, default_currency="EUR")
    assert "line 3: new_ref: 'N1' is already used by line 2" in info.value.message


def test_journal_of_another_batch_is_refused(tmp_path: Path) -> None:
    journal(tmp_path).close()
    with pytest.raises(UsageError, match="belongs to batch batch0001"):
        journal(tmp_path, "batch0002")


# ---- flow control ----------------------------------------------------------------------------
def test_retry_after_seconds_and_http_date() -> None:
    when = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    now = when.timestamp()
    assert parse_retry_after("3", now=now) == 3.0
    assert parse_retry_after(" 1.5 ", now=now) == 1.5
    assert parse_retry_after("2", now=now) == 2.0
    assert parse_retry_after(format_datetime(when + timedelta(seconds=7), usegmt=True),
                             now=now) == 7.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0  # in the past
    assert parse_retry_after("-5", now=now) == 0.0
    assert parse_retry_after("86400", now=now) == 60.0  # capped
    assert parse_retry_after("86400", now=now, cap=5) == 5.0
    assert parse_retry_after("soon", now=now) is None
    assert parse_retry_after("", now=now) is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("nan") is None


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_token_bucket_spaces_requests_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(4.0, burst=1, clock=clock, sleep=clock.sleep)

    async def take(n: int) -> None:
        for _ in range(n):
            await bucket.acquire()

    asyncio.run(take(9))
    assert clock.now == pytest.approx(2.0)  # first is free, then 8 x 0.25 s
    assert bucket.try_take() > 0


def test_token_bucket_allows_a_burst_then_refills() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, burst=5, clock=clock, sleep=clock.sleep)
    assert [bucket.try_take() for _ in range(5)] == [0.0] * 5
    assert bucket.try_take() == pytest.approx(0.1)
    clock.now += 0.35
    assert [bucket.try_take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.try_take() > 0
    assert TokenBucket(None).try_take() == 0.0
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(0)


def test_breaker_opens_after_k_consecutive_failures_only() -> None:
    b = CircuitBreaker(3)
    b.failure("a")
    b.failure("b")
    b.success()
    b.failure("c")
    b.failure("d")
    assert not b.open
    b.failure("e")
    assert b.open
    assert b.last_failure == "e"
    b.success()
    assert b.open, "an open breaker stays open for the run"


@pytest.mark.parametrize("ref", ["AB#C", "#ABC", "A B", "ÄBC", "-ABC", "A" * 64, "Ä" * 64])
def test_rows_accept_what_the_request_model_accepts(tmp_path: Path, ref: str) -> None:
    """Issue 21: the one reference rule (models.fields): a row takes every reference the
    checkout and the wallet take, spaces, '#' and non-ASCII letters included."""
    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.runner import build_request

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"ref": ref, "amount": "1.00"}) + "\n", encoding="utf-8")
    (item,) = list(iter_rows(src, default_currency="EUR"))
    assert isinstance(item, Row), item
    assert item.ref == ref
    req = build_request(PROFILE, "capture", JournalRow(
        "k", 2, ref, "cap-1", Decimal(1), "EUR", None, "planned", 0, None, None, None))
    assert req.client_system_invoice_id == ref


@pytest.mark.parametrize("ref", ["ABC\n", "A\tB", " AB", "AB ", "A\u200bB", "A\u00a0B",
                                 "A" * 65])
def test_rows_accept_only_what_the_request_model_accepts(tmp_path: Path, ref: str) -> None:
    """Issue 9: a ref the request model refuses is an invalid row up front (never a crash in
    the middle of the run, never a 'planned' row that crashes every resume)."""
    from pydantic import ValidationError

    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.runner import build_request, request_problem

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"ref": ref, "amount": "1.00"}) + "\n", encoding="utf-8")
    (item,) = list(iter_rows(src, default_currency="EUR"))
    assert isinstance(item, Problem), item
    assert item.field == "ref", item
    with pytest.raises(ValidationError):  # and the model agrees
        build_request(PROFILE, "capture", JournalRow(
            "k", 2, ref, "cap-1", Decimal(1), "EUR", None, "planned", 0, None, None, None))
    # the plan's model check names the batch column, for anything the row checks let pass
    assert request_problem(PROFILE, "capture", Row(2, "OK", Decimal("1.001"), "EUR")) == \
        Problem(2, "amount", "EUR amounts have 2 decimal places")


def test_a_model_refusal_is_an_invalid_row_and_nothing_is_planned(tmp_path: Path) -> None:
    from walletctl.ops.batch.runner import request_problem

    src = tmp_path / "in.csv"
    src.write_text("ref,amount,new_ref\nPA1,1.00,\nPA2,1.00,PA2\n")
    jr = Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x")
    with pytest.raises(BatchValidationError) as info:
        plan_batch(src, jr, default_currency="EUR",
                   check_request=lambda row: request_problem(PROFILE, "capture", row))
    assert "line 3: new_ref: must differ from ref" in str(info.value)
    assert jr.counts()["planned"] == 0
    jr.close()


def test_a_journal_is_locked_while_open(tmp_path: Path) -> None:
    jr = Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x")
    with pytest.raises(UsageError, match=r"is in use by another run \(pid \d+ on .*, started "):
        Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x")
    jr.close()
    Journal(tmp_path / "j.sqlite", batch_id="batch0001", op="capture", source="x").close()


def test_the_runner_sends_exactly_the_request_the_plan_validated(tmp_path: Path) -> None:
    """The runner builds each row's body from a template (RequestTemplate), without building
    the model again: for every row the plan accepts, the bytes are the validated request's,
    byte for byte, in both amount formats, for every operation and any reference."""
    from dataclasses import replace

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from walletctl.models.base import dumps
    from walletctl.models.money import AmountFormat
    from walletctl.ops.batch.input_rows import Op
    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.runner import RequestTemplate, build_request, request_problem

    cents = st.integers(min_value=1, max_value=10**12)
    currency = st.sampled_from(["EUR", "JPY", "BHD", "USD", "HUF"])
    ops: list[Op] = ["capture", "refund", "reverse"]
    formats: list[AmountFormat] = ["minor", "decimal"]
    op, fmt = st.sampled_from(ops), st.sampled_from(formats)
    # references the model accepts, and anything at all (the plan refuses what it refuses)
    ref = st.one_of(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:/\-]{0,60}", fullmatch=True),
                    st.text(min_size=1, max_size=64))
    checked: list[str] = []

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(cents, currency, op, fmt, ref)
    def check(n: int, cur: str, operation: Op, amount_format: AmountFormat,
              original: str) -> None:
        from walletctl.models.money import exponent

        amount = Decimal(n).scaleb(-exponent(cur))
        if request_problem(PROFILE, operation, Row(2, original, amount, cur)) is not None:
            return  # an invalid row never reaches the runner
        checked.append(original)
        new_ref = derive_reference("b0001", operation, original, 0)
        row = JournalRow(f"{original}#0", 2, original, new_ref, amount, cur, None, "planned",
                         0, None, None, None)
        profile = replace(PROFILE, amount_format=amount_format)
        want = build_request(profile, operation, row)
        got = RequestTemplate(profile, operation).call(row)
        assert got.body == dumps(want.to_wire(amount_format)).encode()
        assert (got.reference, got.invoice, got.amount, got.currency, got.type, got.operation) \
            == (want.client_system_transaction_id, want.client_system_invoice_id, want.amount,
                want.currency_code, want.type, operation)

    check()
    assert len(checked) > 75, checked  # most examples reach the comparison
