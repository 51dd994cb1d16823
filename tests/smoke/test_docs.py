"""docs/ci.md stays true: every option it mentions exists, its scenario list is current."""

from __future__ import annotations

import re
from pathlib import Path

from walletctl.cli.main import app
from walletctl.cli.registry import load_command
from walletctl.ops.smoke.scenarios import SCENARIOS, Amounts

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def _options() -> set[str]:
    smoke = load_command("smoke")
    assert smoke is not None
    names: set[str] = set()
    for command in (app, smoke):
        for param in command.params:
            names.update(o for o in param.opts if o.startswith("--"))
    return names


def test_every_option_in_the_ci_doc_exists() -> None:
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", DOC.read_text()))
    assert mentioned, "the doc mentions no option at all?"
    assert mentioned - _options() == set()


def test_ci_doc_lists_the_current_scenarios_and_amount_names() -> None:
    text = DOC.read_text()
    listing = text.split("$ walletctl smoke --list\n", 1)[1].split("```", 1)[0]
    assert [line.split()[0] for line in listing.splitlines()] == list(SCENARIOS)
    for name, scenario in SCENARIOS.items():
        assert f"{name:<{len(max(SCENARIOS, key=len))}}  {scenario.description}" in listing
    for name in Amounts.names():
        assert f"`{name}`" in text
