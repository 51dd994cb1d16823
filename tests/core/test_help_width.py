"""Every command's --help fits 40, 60 and 80 columns (issue 46): no line wider than the
terminal and no word broken, examples included (a long example command continues with
`` \\``). In-process with COLUMNS set; the real-terminal view is in test_terminal_width.py."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from walletctl.cli.completions import command_tree
from walletctl.cli.main import app

PATHS = sorted(command_tree())


def _help(path: str, width: int) -> str:
    result = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _words(text: str) -> set[str]:
    return {w for w in text.split() if w != "\\"}


@pytest.mark.parametrize("path", PATHS, ids=[p or "walletctl" for p in PATHS])
def test_help_fits_40_60_and_80_columns_with_every_word_whole(path: str) -> None:
    wide = _help(path, 80)
    for width in (40, 60, 80):
        text = _help(path, width)
        long = [line for line in text.splitlines() if len(line) > width and " " in line.strip()]
        assert not long, f"{path} --help at {width}: {long}"
        # a command list's one-line summaries are cut at a word, with "...", to fit
        broken = {w for w in _words(text) - _words(wide) if not w.endswith("...")}
        assert not broken, f"{path} --help at {width}: words broken: {broken}"


def test_a_long_example_continues_as_one_command() -> None:
    text = _help("capture", 40)
    assert "walletctl capture ORDER-1002 \\\n" in text, text
    assert "'first parcel'" in text  # a quoted argument is never split
