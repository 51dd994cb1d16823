"""Item 7: sandbox values/ledger/approve and smoke --list honour --output; amounts in major
units with the currency, as lookup shows them."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from first_hour_fixtures import Served, embedded_serving


@pytest.fixture
def served_sandbox(tmp_path: Path) -> Iterator[Served]:
    """The sandbox in this process on a real port, its ``sbx`` profile as ``sandbox serve
    --write-profile`` writes it (the served process is the point of the first-hour tests)."""
    with embedded_serving(tmp_path) as served:
        yield served


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "table"])
def test_every_format(served_sandbox: Served, fmt: str) -> None:
    sb = served_sandbox
    sb.run("checkout", "--amount", "12.50", "--ref", f"OUT-{fmt}", "--type", "sale")
    outputs = {
        "approve": sb.run("-o", fmt, "sandbox", "approve", f"OUT-{fmt}").stdout,
        "ledger": sb.run("-o", fmt, "sandbox", "ledger").stdout,
        "values": sb.run("-o", fmt, "sandbox", "values").stdout,
        "smoke --list": sb.run("-o", fmt, "smoke", "--list").stdout,
    }
    for name, out in outputs.items():
        if fmt == "json":
            json.loads(out)
        elif fmt == "ndjson":
            assert all(json.loads(line) for line in out.splitlines()), (name, out)
        elif fmt == "csv":
            rows = list(csv.DictReader(io.StringIO(out)))
            assert rows, (name, out)
            assert not out.lstrip().startswith(("{", "[")), (name, out)
        else:
            assert not out.lstrip().startswith(("{", "[")), (name, out)
    if fmt == "table":
        assert "12.50 EUR" in outputs["ledger"]


def test_approve_shows_major_units_like_lookup(served_sandbox: Served) -> None:
    sb = served_sandbox
    sb.run("checkout", "--amount", "12.50", "--ref", "MAJOR-1", "--type", "sale")
    approved = json.loads(sb.run("-o", "json", "sandbox", "approve", "MAJOR-1").stdout)
    looked_up = json.loads(sb.run("-o", "json", "lookup", "MAJOR-1").stdout)
    assert approved["record"]["transactionAmount"] == "12.50"
    assert approved["record"]["transactionAmount"] == looked_up[0]["transactionAmount"]
    assert approved["record"]["currencyCode"] == "EUR"
