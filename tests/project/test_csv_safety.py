"""CSV output never hands a spreadsheet a formula that came from the gateway."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from walletctl.render.output import csv_safe, write_csv


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+1", "'+1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-cmd", "'-cmd"),
        ("\tx", "'\tx"),
        ("-5", "-5"),
        ("Approved", "Approved"),
        ("", ""),
    ],
)
def test_csv_safe(raw: str, safe: str) -> None:
    assert csv_safe(raw) == safe


def test_write_csv_neutralises_gateway_text_but_not_amounts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_csv([{"state": "=cmd|' /C calc'!A0", "amount": Decimal("12.50")}])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows == [{"state": "'=cmd|' /C calc'!A0", "amount": "12.50"}], rows
