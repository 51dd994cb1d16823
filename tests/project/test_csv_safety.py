"""CSV output never hands a spreadsheet a formula that came from the gateway."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import pytest

from walletctl.render.formats import write_rows
from walletctl.render.formats.csv import csv_safe


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
    write_rows("csv", [{"state": "=cmd|' /C calc'!A0", "amount": Decimal("12.50")}])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows == [{"state": "'=cmd|' /C calc'!A0", "amount": "12.50"}], rows


def test_profile_show_csv_leaves_unset_values_empty_and_guards_real_ones(
    tmp_path: Path,
) -> None:
    """The table's '-' placeholder for an unset value reached the CSV as a guarded "'-"; an
    unset value is an empty cell, and a real value that starts like a formula is still
    neutralised."""
    from click.testing import CliRunner

    from walletctl.cli.main import app

    config = tmp_path / "profiles.toml"
    config.write_text('[profiles.shop]\nbase_url = "https://gw.example"\n'
                      'merchant_id = "=HYPERLINK(1)"\nstore_id = "+S"\nuser_id = "-ops"\n'
                      '[profiles.shop.auth]\nscheme = "PublicApiKey"\nkey_env = "SHOP_KEY"\n')
    config.chmod(0o600)
    result = CliRunner().invoke(app, ["--config", str(config), "-o", "csv", "profile", "show"])
    assert result.exit_code == 0, result.output
    cells = dict(csv.reader(io.StringIO(result.stdout)))
    assert cells["timezone"] == "", cells
    assert cells["auth.header"] == "", cells
    assert cells["redirects.success_url"] == "", cells
    assert [k for k, v in cells.items() if v == "'-"] == [], result.stdout
    assert (cells["merchant_id"], cells["store_id"], cells["user_id"]) == (
        "'=HYPERLINK(1)", "'+S", "'-ops")
    # the table still shows the placeholder
    table = CliRunner().invoke(app, ["--config", str(config), "-o", "table", "profile", "show"])
    assert any(line.split() == ["timezone", "-"] for line in table.stdout.splitlines())
