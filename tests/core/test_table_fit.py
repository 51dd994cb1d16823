"""Item 3: every table fits 80 columns without breaking a word; wide terminals get it all.

A word broken across lines shows up as a fragment ("Authori", "zedByPr") that the same table
rendered 400 columns wide does not contain: every token at 80 columns must be a whole token
of the wide rendering (or of the short date form / the "hidden columns" note).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from walletctl.constants import ExitCode

NOTE_WORDS = {"hidden", "at", "80", "100", "columns", "-o", "json", "shows", "every", "field"}
SHORT_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{2}:\d{2}:\d{2}$|^Date/time$")
BOX = {chr(c) for c in range(0x2500, 0x2580)} | {" "}


def _tokens(text: str) -> list[str]:
    out = []
    for token in text.split():
        token = token.strip(",;:()")
        if token and not set(token) <= BOX:
            out.append(token)
    return out


def assert_fits(narrow: str, wide: str, width: int = 80) -> None:
    for line in narrow.splitlines():
        # one word longer than the terminal (a table's title that is a long path) stands on
        # its own line, whole: the terminal wraps it, nothing folds it mid-word
        assert len(line.rstrip()) <= width or " " not in line.strip(), \
            f"line wider than {width}: {line!r}"
    vocabulary = set(_tokens(wide)) | NOTE_WORDS
    broken = [t for t in _tokens(narrow) if t not in vocabulary and not SHORT_DATE.match(t)]
    assert not broken, f"words broken across lines: {broken}\n{narrow}"


def _both(cli: Any, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[str, str]:
    texts = []
    for columns in ("80", "400"):
        monkeypatch.setenv("COLUMNS", columns)
        result = cli("-o", "table", *argv)
        assert result.exit_code == ExitCode.OK, result.output
        texts.append(result.stdout)
    return texts[0], texts[1]


def test_lookup_and_followup_results_fit(cli: Any, make_order: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ref = "ORDER-20261122-055117-AUTH"
    make_order(ref, amount="40.00")
    for op, amount in (("capture", "15.00"), ("capture", "5.00"), ("refund", "5.00")):
        monkeypatch.setenv("COLUMNS", "80")
        result = cli("-o", "table", op, ref, "--amount", amount, "--yes")
        assert result.exit_code == 0, result.output
        assert any(line.strip().endswith(("Approved (CapturedByProvider)",
                                          "Approved (RefundedByProvider)"))
                   for line in result.stdout.splitlines()), result.stdout
        for line in result.stdout.splitlines():
            assert len(line) <= 80, line
    narrow, wide = _both(cli, monkeypatch, "lookup", ref)
    assert_fits(narrow, wide)
    assert "AuthorizedByProvider" in wide
    assert "T" in wide.split("AuthorizedByProvider")[1].split()[0]  # the full date when wide
    assert "hidden at 80 columns" in narrow
    monkeypatch.setenv("COLUMNS", "100")
    result = cli("-o", "table", "lookup", ref)
    assert_fits(result.stdout, wide, 100)


@pytest.mark.parametrize("argv", [["profile", "list"], ["profile", "show"],
                                  ["profile", "check"], ["smoke", "--list"],
                                  ["sandbox", "values"]])
def test_profile_and_list_tables_fit(cli: Any, monkeypatch: pytest.MonkeyPatch,
                                     argv: list[str]) -> None:
    narrow, wide = _both(cli, monkeypatch, *argv)
    assert_fits(narrow, wide, width=10_000)  # soft-wrapped lines: the terminal wraps them
    if argv[:2] == ["profile", "list"]:
        assert_fits(narrow, wide)


def test_sandbox_ledger_table_fits(sandbox: Any, make_order: Any,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.render.sandbox import render_ledger

    make_order("ORDER-20261122-055117-LEDGER", amount="40.00")
    data = sandbox.ledger()["transactions"]  # render_ledger takes the transactions
    texts = []
    for columns in ("80", "400"):
        monkeypatch.setenv("COLUMNS", columns)
        render_ledger(data, "table", "http://127.0.0.1:8765")
        texts.append(capsys.readouterr().out)
    assert_fits(texts[0], texts[1])
    assert "40.00 EUR" in texts[0]


def test_piped_output_is_never_padded(cli: Any, make_order: Any) -> None:
    make_order("ORDER-PAD-1")
    for fmt in ("json", "ndjson", "csv"):
        out = cli("-o", fmt, "lookup", "ORDER-PAD-1").stdout
        assert not any(line != line.rstrip() for line in out.splitlines()), (fmt, out)


@pytest.mark.parametrize("width", [80, 100])
def test_history_and_lookup_keep_words_whole(cli: Any, make_order: Any,
                                             monkeypatch: pytest.MonkeyPatch,
                                             width: int) -> None:
    """Rich's own column collapsing folded long words ("AuthorizedByProvi/der" at 100
    columns, "ORDER-100/1" in the history at 80); the widths are now set by walletctl."""
    ref = "ORDER-20261122-055117-AUTH"
    make_order(ref, amount="40.00")
    assert cli("capture", ref, "--amount", "15.00").exit_code == 0
    assert cli("refund", ref, "--amount", "5.00", "--yes", "--reason",
               "parcel lost, ticket 4471").exit_code == 0
    for argv in (["history"], ["lookup", ref]):
        texts = []
        for columns in (str(width), "400"):
            monkeypatch.setenv("COLUMNS", columns)
            result = cli("-o", "table", *argv)
            assert result.exit_code == ExitCode.OK, result.output
            texts.append(result.stdout)
        assert_fits(texts[0], texts[1], width)


@pytest.mark.parametrize("columns", ["80", "200"])
def test_tables_start_with_their_title_or_header(cli: Any, make_order: Any,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 columns: str) -> None:
    """The top edge of a SIMPLE_HEAD table is a line of blanks: it made the history table
    start with an empty line (and put one under every title). Now the output starts with the
    title or the header, and no blank line comes before the header's rule."""
    ref = "ORDER-20261122-055117-TOP"
    make_order(ref, amount="40.00")
    assert cli("capture", ref, "--amount", "15.00").exit_code == 0
    monkeypatch.setenv("COLUMNS", columns)
    for argv, stdin, first in ((["history"], None, " #"),
                               (["profile", "list"], None, str(cli.config)[:20]),
                               (["lookup", ref], None, f"Transactions for {ref}")):
        result = cli("-o", "table", *argv, input=stdin)
        assert result.exit_code == ExitCode.OK, (argv, result.output)
        lines = result.stdout.splitlines()
        assert lines[0].startswith(first), (argv, result.stdout)
        rule = next(i for i, line in enumerate(lines) if line.strip() and
                    set(line.strip()) == {"─"})
        assert all(line.strip() for line in lines[:rule]), (argv, result.stdout)


def test_a_command_in_backticks_is_not_split_over_two_lines() -> None:
    """A hint's `walletctl ...` command is copied whole: it moves to the next line rather than
    break there, unless it is wider than a line by itself (then between its words)."""
    from walletctl.render.console import wrap_words

    text = ("profile sbx saved to /tmp/config/profiles.toml and made the default; use it with "
            "`walletctl -p sbx lookup REF` or any other command")
    for width in (40, 60, 80):
        lines = wrap_words(text, width).splitlines()
        assert all(len(line) <= width for line in lines), lines
        assert any("`walletctl -p sbx lookup REF`" in line for line in lines), lines
    long = "run `" + " ".join(["walletctl"] * 12) + "` now"
    lines = wrap_words(long, 40).splitlines()
    assert all(len(line) <= 40 for line in lines), lines
