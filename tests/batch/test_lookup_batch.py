"""`walletctl lookup --batch`: balance reports on the batch engine (issue 13, second half)."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from batch_fakes import FakeGateway, Faults
from batch_helpers import cli_env, seed_preauths_fast, set_faults, write_profile

from cli_runner import run_walletctl
from walletctl.errors import GatewayError
from walletctl.models.records import TransactionRecord
from walletctl.ops.batch.balance_report import BalanceReport, Filters, LookupOptions, iter_refs
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

FAST = LookupOptions(concurrency=8, backoff_initial=0.001, backoff_max=0.002)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb


def cli(cfg: Path, home: Path, *args: str, stdin: str | None = None,
        columns: int = 80) -> subprocess.CompletedProcess[str]:
    return run_walletctl(["--config", str(cfg), *args],
                         env={**cli_env(home), "COLUMNS": str(columns)}, input=stdin)


@pytest.fixture(scope="module")
def ledger_setup(sandbox: EmbeddedSandbox, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, Path]:
    """OPEN-1 untouched, PART-1 captured 4.00 of 10.00, FULL-1 captured and refunded 3.00."""
    set_faults(sandbox.url, {})
    assert httpx.post(sandbox.url + "/_sandbox/reset").status_code == 200
    home = tmp_path_factory.mktemp("lookup")
    seed_preauths_fast(sandbox.store, ["OPEN-1", "PART-1", "FULL-1"], "10.00")
    cfg = write_profile(home, sandbox.url)
    caps = home / "caps.csv"
    caps.write_text("ref,amount\nPART-1,4.00\nFULL-1,10.00\n")
    assert cli(cfg, home, "-o", "json", "capture", "--batch", str(caps)).returncode == 0
    refunds = home / "refunds.csv"
    refunds.write_text("ref,amount\nFULL-1,3.00\n")
    assert cli(cfg, home, "-o", "json", "refund", "--batch", str(refunds),
               "--yes").returncode == 0
    refs = home / "refs.csv"
    refs.write_text("ref\nOPEN-1\nPART-1\nFULL-1\nNOPE-1\nbad\tref\n")
    return cfg, refs


def test_one_row_per_reference_with_balances_errors_and_totals(
    ledger_setup: tuple[Path, Path]
) -> None:
    cfg, refs = ledger_setup
    proc = cli(cfg, refs.parent, "-o", "ndjson", "lookup", "--batch", str(refs))
    assert proc.returncode == 5, proc.stderr  # complete, but two references have errors
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    rows, last = lines[:-1], lines[-1]
    assert [r["line"] for r in rows] == [2, 3, 4, 5, 6]  # input order
    by_ref = {r["ref"]: r for r in rows}
    assert by_ref["OPEN-1"] | {} == {**by_ref["OPEN-1"], "state": "Approved", "currency": "EUR",
                                     "authorised": "10.00", "captured": "0.00",
                                     "capturable": "10.00", "refundable": "0.00",
                                     "error": None}
    assert (by_ref["PART-1"]["captured"], by_ref["PART-1"]["capturable"]) == ("4.00", "6.00")
    full = by_ref["FULL-1"]
    assert (full["captured"], full["refunded"], full["refundable"]) == ("10.00", "3.00", "7.00")
    assert full["first_time"] <= full["last_time"]
    assert "unknown reference" in by_ref["NOPE-1"]["error"]
    assert by_ref["bad\\tref"]["error"].startswith("ref: has U+0009 at character 4; a reference")
    totals = last["totals"]["EUR"]
    assert totals["references"] == 3
    assert (totals["authorised"], totals["captured"], totals["refunded"]) == \
        ("30.00", "14.00", "3.00")
    assert last["summary"]["errors"] == 2
    assert last["summary"]["requests"] == 4  # the invalid ref is never sent


def test_a_reference_listed_twice_is_looked_up_and_counted_once(
    ledger_setup: tuple[Path, Path]
) -> None:
    """Issue 22: the batch file fed as-is (a capture file lists an order once per capture)
    counted the order twice in the totals, silently."""
    cfg, refs = ledger_setup
    dup = refs.parent / "dups.csv"
    dup.write_text("ref\nPART-1\nFULL-1\nPART-1\nOPEN-1\nFULL-1\nPART-1\n")
    proc = cli(cfg, refs.parent, "-o", "ndjson", "lookup", "--batch", str(dup))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    rows, last = lines[:-1], lines[-1]
    assert [(r["line"], r["ref"]) for r in rows] == [(2, "PART-1"), (3, "FULL-1"),
                                                      (5, "OPEN-1")]
    totals = last["totals"]["EUR"]
    # once each: 10 + 10 + 10 authorised, 4 + 10 captured (not 18 + 20)
    assert (totals["references"], totals["authorised"], totals["captured"],
            totals["refunded"]) == (3, "30.00", "14.00", "3.00")
    assert last["summary"]["duplicates_folded"] == 3
    assert last["summary"]["requests"] == 3
    assert "line 4: PART-1 repeats line 2" in proc.stderr
    table = cli(cfg, refs.parent, "-o", "table", "lookup", "--batch", str(dup), columns=140)
    assert "3 repeated references folded" in table.stdout, table.stdout
    assert "14.00" in table.stdout
    assert "18.00" not in table.stdout


def test_filters_open_state_and_age(ledger_setup: tuple[Path, Path]) -> None:
    cfg, refs = ledger_setup
    proc = cli(cfg, refs.parent, "-o", "json", "lookup", "--batch", str(refs), "--open")
    doc = json.loads(proc.stdout)
    ok = [r["ref"] for r in doc["rows"] if r["error"] is None]
    assert ok == ["OPEN-1", "PART-1"]
    assert doc["totals"]["EUR"]["capturable"] == "16.00"
    proc = cli(cfg, refs.parent, "-o", "json", "lookup", "--batch", str(refs),
               "--older-than", "6d")
    assert [r["ref"] for r in json.loads(proc.stdout)["rows"] if r["error"] is None] == []
    proc = cli(cfg, refs.parent, "-o", "json", "lookup", "--batch", str(refs),
               "--older-than", "0s", "--state", "approved")
    assert len([r for r in json.loads(proc.stdout)["rows"] if r["error"] is None]) == 3
    proc = cli(cfg, refs.parent, "lookup", "--batch", str(refs), "--older-than", "six days")
    assert proc.returncode == 2
    assert "--older-than: must be a number and a unit" in proc.stderr


def test_csv_stdin_jsonl_and_an_80_column_table(ledger_setup: tuple[Path, Path]) -> None:
    cfg, refs = ledger_setup
    jsonl = "".join(json.dumps({"ref": r}) + "\n" for r in ("OPEN-1", "PART-1"))
    proc = cli(cfg, refs.parent, "-o", "csv", "lookup", "--batch", "-", stdin=jsonl)
    assert proc.returncode == 0, proc.stderr
    head, *body = proc.stdout.splitlines()
    assert head.startswith("line,ref,kind,state,currency,authorised,captured")
    assert [b.split(",")[1] for b in body] == ["OPEN-1", "PART-1"]
    assert "total EUR (2 refs)" in proc.stderr
    proc = cli(cfg, refs.parent, "-o", "table", "lookup", "--batch", str(refs))
    assert proc.returncode == 5, proc.stderr  # the file holds two unknown references
    table = proc.stdout
    assert "OPEN-1" in table
    assert "Totals per currency" in table
    grid = [ln for ln in table.splitlines() if "Approved" in ln or "Authorised" in ln]
    assert grid
    assert all(len(ln) <= 80 for ln in grid), grid
    assert "Approved" in table  # words kept whole
    # no blank line (a SIMPLE_HEAD table's top edge) under the titles
    lines = table.splitlines()
    assert lines[0].startswith("Balances of the references in"), table
    rules = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"─"}]
    assert len(rules) == 2, table
    assert all(line.strip() for line in lines[:rules[0]]), table
    assert lines[rules[1] - 2] == "Totals per currency", table


def test_unreachable_gateway_stops_at_once(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = write_profile(tmp_path, f"http://127.0.0.1:{port}")
    refs = tmp_path / "refs.csv"
    refs.write_text("ref\n" + "".join(f"R-{i}\n" for i in range(500)))
    proc = cli(cfg, tmp_path, "-o", "json", "lookup", "--batch", str(refs))
    assert proc.returncode == 7, proc.stderr
    assert "walletctl: stopped: could not connect" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["summary"]["requests"] <= 32 * 3
    assert len(doc["rows"]) == 500


# ---- the engine, against the in-memory fake --------------------------------------------------
def _run(gw: object, refs: list[str], tmp_path: Path,
         options: LookupOptions = FAST) -> tuple[list[str], BalanceReport]:
    src = tmp_path / "refs.csv"
    src.write_text("ref\n" + "".join(f"{r}\n" for r in refs))
    engine = BalanceReport(gw, options)  # type: ignore[arg-type]

    async def collect() -> list[str]:
        return [row.ref async for row in engine.rows(iter_refs(src))]

    return asyncio.run(collect()), engine


class _Jittery(FakeGateway):
    async def lookup(self, reference: str) -> list[TransactionRecord]:
        await asyncio.sleep(self.rng.random() / 500)
        return await super().lookup(reference)


def test_rows_come_out_in_input_order_under_faults(tmp_path: Path) -> None:
    gw = _Jittery(Faults(lookup_error=0.2), seed=3)
    refs = [f"PA{i}" for i in range(400)]
    for r in refs:
        gw.add_preauth(r, "5.00")
    out, engine = _run(gw, refs, tmp_path)
    assert out == refs
    assert engine.report.errors == 0
    assert engine.report.requests > 400  # the 503s were retried


class _Throttling(FakeGateway):
    async def lookup(self, reference: str) -> list[TransactionRecord]:
        if self.rng.random() < 0.3:
            raise GatewayError(429, description="TooManyRequests", retry_after=0.01)
        return await super().lookup(reference)


def test_429_is_honoured_and_credentials_refused_stop_the_report(tmp_path: Path) -> None:
    gw = _Throttling(seed=5)
    refs = [f"PA{i}" for i in range(100)]
    for r in refs:
        gw.add_preauth(r, "5.00")
    out, engine = _run(gw, refs, tmp_path)
    assert out == refs
    assert engine.report.errors == 0
    denied = FakeGateway(Faults(auth_fail=True))
    out, engine = _run(denied, refs, tmp_path)
    assert engine.report.fatal_code == 9
    assert denied.lookups <= FAST.concurrency


def test_filters_keep_errors_and_select_open_preauths() -> None:
    from datetime import UTC, datetime, timedelta

    from walletctl.ops.batch.balance_report import balance_row

    now = datetime.now(UTC)
    rec = TransactionRecord(id="1", state="Approved", currency_code="EUR",
                            transaction_amount=Decimal("5.00"), client_system_transaction_id="A",
                            type="ecom.preauthorization",
                            transaction_date_time="2020-01-01T00:00:00.0000000")
    row = balance_row(2, "A", [rec])
    assert Filters(open_only=True).keep(row)
    assert Filters(older_than=timedelta(days=6), now=now).keep(row)
    assert not Filters(states=frozenset({"declined"})).keep(row)
    error = balance_row(3, "B", [])
    assert Filters(open_only=True, states=frozenset({"x"})).keep(error)
    assert random.Random(0)  # keep the import honest for the seeded fakes
