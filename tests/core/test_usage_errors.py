"""Item 4: one error voice. Every usage error, Click's own included, is
``walletctl: error: ...`` + ``hint: ...``, exit 2; unknown commands get "did you mean"."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import click
import pytest
from click.testing import CliRunner

from walletctl.cli.main import app, run_command
from walletctl.constants import ExitCode


def _voice(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith("walletctl: error: "), stderr
    assert lines[1].startswith("hint: "), stderr
    assert "Usage:" not in stderr
    assert "Error:" not in stderr
    return lines


# Every kind of usage error Click raises, fed through the one boundary (run_command).
@pytest.mark.parametrize(("exc", "expected"), [
    (click.UsageError("Got unexpected extra argument (x)"), "got unexpected extra argument (x)"),
    (click.BadParameter("must be positive", param_hint="'--amount'"),
     "invalid value for --amount: must be positive"),
    (click.MissingParameter(param=click.Argument(["ref"]), param_type="argument"),
     "missing REF"),
    (click.MissingParameter(param=click.Option(["--amount"]), param_type="option"),
     "missing option --amount"),
    (click.NoSuchOption("--amout", possibilities=["--amount"]), "no such option '--amout'"),
    (click.BadOptionUsage("--amount", "Option '--amount' requires an argument."),
     "option --amount requires an argument"),
    (click.BadArgumentUsage("REF takes one value"), "REF takes one value"),
    (click.exceptions.NoSuchCommand("refnud", possibilities=["refund"]),
     "no such command 'refnud'"),
])
def test_every_click_usage_error_goes_through_the_boundary(
    exc: click.UsageError, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    @click.group(name="walletctl")
    def root() -> None:
        pass

    @root.command(name="refund")
    def refund() -> None:
        raise exc

    @root.command(name="lookup")
    def lookup() -> None:
        pass

    assert run_command(root, ["refund"], "walletctl", {}) == ExitCode.USAGE
    first, hint = _voice(capsys.readouterr().err)
    assert expected in first, first
    if isinstance(exc, click.exceptions.NoSuchOption):
        assert hint == "hint: did you mean '--amount'?"


def _run(*argv: str) -> Any:
    return CliRunner().invoke(app, list(argv))


@pytest.mark.parametrize(("argv", "first", "hint"), [
    (["refnud"], "no such command 'refnud'", "did you mean 'walletctl refund'?"),
    (["sandbox", "servee"], "sandbox: no such command 'servee'",
     "did you mean 'walletctl sandbox serve'"),
    (["profile", "lst"], "profile: no such command 'lst'",
     "did you mean 'walletctl profile list'"),
    (["lookup"], "lookup: missing REF (usage: walletctl lookup [OPTIONS] REF",
     "see `walletctl lookup --help`"),
    (["refund"], "refund: missing REF", "see `walletctl refund --help`"),
    (["refund", "--yes"], "refund: missing REF", "see `walletctl refund --help`"),
    (["capture"], "capture: missing REF", "see `walletctl capture --help`"),
    (["reverse", "-y"], "reverse: missing REF", "see `walletctl reverse --help`"),
    (["lookup", "R", "--amout"], "lookup: no such option '--amout'", ""),
    (["capture", "R", "--amout", "1"], "capture: no such option '--amout'",
     "did you mean '--amount'"),
    (["capture", "R", "--amount"], "capture: option --amount requires an argument",
     "see `walletctl capture --help`"),
    (["-o", "xml", "lookup", "R"], "invalid value for --output", "see `walletctl --help`"),
    (["--timeout", "abc", "lookup", "R"], "invalid value for --timeout", "see `walletctl"),
    (["sandbox", "serve", "--port", "x"], "sandbox serve: invalid value for --port",
     "see `walletctl sandbox serve --help`"),
    (["profile", "add"], "profile add: missing NAME", "see `walletctl profile add --help`"),
    (["completion", "tcsh"], "completion: unknown shell 'tcsh'", "one of: bash"),
    # required values given nowhere: usage errors (exit 2), not invalid requests (exit 4)
    (["checkout", "--ref", "R-1"], "checkout: missing option --amount (required: the amount",
     "see `walletctl checkout --help`"),
    (["checkout", "--amount", "1"], "checkout: missing option --ref (required:",
     "see `walletctl checkout --help`"),
    (["checkout"], "checkout: missing options --amount (required: the amount in major units, "
     "e.g. 12.34); --ref (required:", "see `walletctl checkout --help`"),
    (["authorize", "--account", "A-1", "--ref", "R-1"],
     "authorize: missing option --amount (required:", "see `walletctl authorize --help`"),
    (["authorize", "--ref", "R-1", "--amount", "1"],
     "authorize: missing option --account (required: the transactionAccountId, or --event",
     "see `walletctl authorize --help`"),
    (["account", "--encryption-key-id", "k"], "account: missing TRANSACTION_ACCOUNT_ID (usage: "
     "walletctl account [OPTIONS] TRANSACTION_ACCOUNT_ID, or --event FILE)",
     "see `walletctl account --help`"),
])
def test_usage_errors_speak_with_one_voice(argv: list[str], first: str, hint: str) -> None:
    result = _run(*argv)
    assert result.exit_code == ExitCode.USAGE, (argv, result.output)
    lines = _voice(result.stderr)
    assert lines[0].startswith(f"walletctl: error: {first}"), lines
    assert lines[1].startswith(f"hint: {hint}"), lines
    assert result.stdout == ""


def test_the_installed_command_speaks_the_same_way() -> None:
    proc = subprocess.run([sys.executable, "-m", "walletctl", "refnud"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == ExitCode.USAGE
    assert _voice(proc.stderr)[1] == "hint: did you mean 'walletctl refund'?"


def test_a_bare_group_still_shows_its_help() -> None:
    result = _run("sandbox")
    assert result.exit_code == ExitCode.USAGE
    assert "Commands:" in result.stderr
