"""``walletctl sandbox faults`` and ``walletctl sandbox seed`` against a real ``sandbox serve``
(a subprocess on a real port, its profile written by ``--write-profile``), as a user runs them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from first_hour_fixtures import Served, embedded_serving


@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[Served]:
    """The sandbox in this process on a real port, its ``sbx`` profile as ``sandbox serve
    --write-profile`` writes it (the served process is the point of the first-hour tests)."""
    with embedded_serving(tmp_path) as served:
        yield served


def faults(sb: Served, *argv: str, check: int = 0) -> dict[str, object]:
    out = sb.run("-p", "sbx", "-o", "json", "sandbox", "faults", *argv, check=check)
    return json.loads(out.stdout) if check == 0 else {"stderr": out.stderr}


def test_faults_set_show_clear_and_a_request_sees_them(served_sandbox: Served) -> None:
    sb = served_sandbox
    assert faults(sb)["error_rate"] == 0.0
    table = sb.run("-p", "sbx", "-o", "table", "sandbox", "faults").stdout
    assert table.startswith(f"no faults at {sb.url}")
    set_ = faults(sb, "--error-rate", "1", "--error-status", "502", "--seed", "7")
    assert (set_["error_rate"], set_["error_status"], set_["seed"]) == (1.0, 502, 7)
    # one more option keeps the others
    kept = faults(sb, "--latency", "5")
    assert (kept["latency_ms"], kept["error_rate"], kept["error_status"]) == (5, 1.0, 502)
    assert faults(sb) == kept
    # a request through the CLI now meets the fault (502 before commit: exit 6)
    looked = sb.run("-p", "sbx", "lookup", "ORDER-FAULT-1", check=6)
    assert "HTTP 502" in looked.stderr
    assert "injected failure before commit" in looked.stderr
    cleared = faults(sb, "--clear")
    assert cleared["error_rate"] == 0.0
    assert cleared["latency_ms"] == 0
    sb.run("-p", "sbx", "lookup", "ORDER-FAULT-1", check=5)  # 404 again: no fault
    # --clear with options: only those afterwards
    assert faults(sb, "--clear", "--throttle-rate", "0.5")["throttle_rate"] == 0.5
    assert faults(sb, "--clear")["throttle_rate"] == 0.0


def test_a_fault_out_of_range_is_a_usage_error_before_anything_is_sent(
        served_sandbox: Served) -> None:
    for argv, field in ((("--error-rate", "2"), "--error-rate"),
                        (("--error-status", "404"), "--error-status"),
                        (("--latency", "-1"), "--latency"),
                        (("--drop-rate", "nan"), "--drop-rate")):
        out = served_sandbox.run("-p", "sbx", "sandbox", "faults", *argv, check=2)
        assert field in out.stderr.splitlines()[0], out.stderr
    assert faults(served_sandbox)["error_rate"] == 0.0


def test_the_documented_curl_line_sends_json(served_sandbox: Served) -> None:
    """docs/sandbox.md's curl line, as printed (Content-Type given): 200, not 415."""
    body = '{"drop-rate": 0.1, "seed": 7}'
    answer = httpx.post(f"{served_sandbox.url}/_sandbox/faults", content=body,
                        headers={"Content-Type": "application/json"}, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["drop_rate"] == 0.1
    docs = (Path(__file__).parents[2] / "docs" / "sandbox.md").read_text()
    for line in docs.splitlines():
        if "curl" in line and " -d " in line:
            assert "Content-Type: application/json" in line, line


def test_seed_100_then_capture_the_batch(served_sandbox: Served, tmp_path: Path) -> None:
    sb = served_sandbox
    target = tmp_path / "preauths.csv"
    out = sb.run("-p", "sbx", "-o", "json", "sandbox", "seed", "100", "--amount",
                 "5.00-80.00", "--ref", "seed-{n:04}", "--csv", str(target))
    summary = json.loads(out.stdout)
    assert summary["created"] == 100
    assert f"next: `walletctl capture --batch {target} -p sbx`" in out.stderr
    with target.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["ref"] for r in rows] == [f"seed-{n:04}" for n in range(1, 101)]
    amounts = [Decimal(r["amount"]) for r in rows]
    assert all(Decimal("5.00") <= a <= Decimal("80.00") for a in amounts)
    assert not any(1 <= int(a * 100) % 100 <= 5 for a in amounts)  # no magic amounts
    assert sum(amounts) == Decimal(summary["total"])
    lookup = json.loads(sb.run("-p", "sbx", "-o", "json", "lookup", "seed-0042").stdout)
    assert "AuthorizedByProvider" in json.dumps(lookup)
    batch = sb.run("-p", "sbx", "-o", "json", "capture", "--batch", str(target), "--yes")
    assert "100" in batch.stdout
    ledger = json.loads(sb.run("-p", "sbx", "-o", "json", "sandbox", "ledger").stdout)
    captures = [t for t in ledger["transactions"] if t["kind"] == "capture"]
    assert len(captures) == 100
    assert all(t["state"] == "Approved" for t in captures)
    # the same references again: refused whole, nothing stored twice
    again = sb.run("-p", "sbx", "sandbox", "seed", "3", "--ref", "seed-{n:04}", "--csv",
                   str(tmp_path / "again.csv"), check=5)
    assert "seed-0001 is already used" in again.stderr
    ledger = json.loads(sb.run("-p", "sbx", "-o", "json", "sandbox", "ledger").stdout)
    assert ledger["count"] == 200


def test_seed_to_stdout_writes_the_csv_there_and_the_summary_on_stderr(
        served_sandbox: Served) -> None:
    out = served_sandbox.run("-p", "sbx", "sandbox", "seed", "3", "--amount", "7.50",
                             "--ref", "out-{n}", "--csv", "-")
    assert out.stdout.splitlines() == ["ref,amount,currency", "out-1,7.50,EUR",
                                       "out-2,7.50,EUR", "out-3,7.50,EUR"], out.stdout
    assert "3 approved pre-authorisations" in out.stderr, out.stderr


def test_seed_refuses_bad_options_before_anything_is_created(
        served_sandbox: Served, tmp_path: Path) -> None:
    for argv, message in ((("--amount", "12.01"), "--amount: ends in 01, 03 or 04"),
                          (("--amount", "9-3"), "--amount: must be greater than 0"),
                          (("--kind", "refund"), "--kind: must be preauth or sale"),
                          (("--ref", "seed"), "--ref: must contain {n}"),
                          (("--ref", " lead {n}"), "--ref: the pattern gives ' lead 1', which "
                                                   "starts with a space"),
                          (("--ref", "tab\t{n}"), "--ref: the pattern gives 'tab\\t1', which "
                                                  "has U+0009")):
        out = served_sandbox.run("-p", "sbx", "sandbox", "seed", "5", "--csv",
                                 str(tmp_path / "s.csv"), *argv, check=2)
        assert out.stderr.startswith(f"walletctl: error: {message}"), out.stderr
    ledger = json.loads(served_sandbox.run("-p", "sbx", "-o", "json", "sandbox",
                                           "ledger").stdout)
    assert ledger["count"] == 0


def test_the_seed_route_refuses_bad_bodies_in_the_error_shape(served_sandbox: Served) -> None:
    url = f"{served_sandbox.url}/_sandbox/seed"
    good = {"merchantId": "M-1", "storeId": "S-1", "currency": "EUR", "kind": "sale",
            "transactions": [{"reference": "R-1", "amount": "10.00"}]}
    for change, field in (({"kind": "refund"}, "kind"),
                          ({"transactions": []}, "transactions"),
                          ({"transactions": [{"reference": "R\t1", "amount": "1.00"}]},
                           "transactions[0].reference"),
                          ({"transactions": [{"reference": "R-1", "amount": "1.001"}]},
                           "transactions[0].amount"),
                          ({"transactions": [{"reference": "R-1", "amount": "1.04"}]},
                           "transactions[0].amount"),
                          ({"currency": "EURO"}, "currency")):
        answer = httpx.post(url, json={**good, **change}, timeout=10)
        assert answer.status_code == 400, (change, answer.text)
        assert answer.json()["details"]["message"].startswith(f"{field}: "), answer.text
    assert httpx.post(url, json=good, timeout=10).json()["created"] == 1
