"""Item 5: each operation's help says the reference it really derives."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from walletctl.cli.main import app
from walletctl.ops.redirect import derive_reference


@pytest.mark.parametrize(("op", "tag"), [("capture", "CAP"), ("refund", "REF"),
                                         ("reverse", "REV")])
def test_new_ref_help_names_the_derived_reference(op: str, tag: str) -> None:
    result = CliRunner().invoke(app, [op, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    line = text[text.index("--new-ref"):].split(" --", 1)[0]
    assert f"REF-{tag}1" in line, line
    assert derive_reference("REF", op, 1) == f"REF-{tag}1"  # type: ignore[arg-type]
    others = {"CAP", "REF", "REV"} - {tag}
    assert not any(f"REF-{other}1" in line for other in others), line
