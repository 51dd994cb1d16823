"""The money commands' --help ends with examples that the real commands accept, laid out for
80 columns; --version names everything a bug report needs."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from importlib.metadata import version

import pytest

from cli_runner import run_walletctl
from walletctl import __version__
from walletctl.cli.main import LIBRARIES
from walletctl.cli.registry import EXAMPLES

MONEY_COMMANDS = ("checkout", "capture", "refund", "reverse", "lookup", "authorize")


def walletctl(*args: str) -> subprocess.CompletedProcess[str]:
    done = run_walletctl(args, env=dict(os.environ, COLUMNS="80"))  # in-process
    assert done.returncode == 0, done
    return done


@pytest.mark.parametrize("command", MONEY_COMMANDS)
def test_help_ends_with_examples_at_80_columns(command: str) -> None:
    assert 2 <= len(EXAMPLES.get(command, ())) <= 3, f"{command}: 2-3 examples"
    out = walletctl(command, "--help").stdout
    assert "\nExamples:" in out.replace("  Examples:", "Examples:"), out
    examples = out.split("Examples:", 1)[1]
    for what, line in EXAMPLES[command]:
        assert f"    # {what}\n    {line}\n" in examples, f"{command}: {line!r} not as written"
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, f"{command} --help is wider than 80 columns: {too_wide}"


@pytest.mark.parametrize(("command", "line"),
                         [(c, line) for c, examples in EXAMPLES.items() for _, line in examples])
def test_every_example_is_accepted_by_the_command(command: str, line: str) -> None:
    """Each example parses with the real command (an unknown option or a missing value fails)."""

    from walletctl.cli.main import app

    words = shlex.split(line)
    for stop in ("<", ">", "|", "&&"):
        words = words[: words.index(stop)] if stop in words else words
    assert words[0] == "walletctl"
    ctx = app.make_context("walletctl", words[1:])
    rest = [*ctx.protected_args, *ctx.args]
    assert rest[0] == command, f"{line}: runs {rest[0]!r}, not {command!r}"
    sub = app.get_command(ctx, command)
    sub.make_context(command, rest[1:], parent=ctx)


def test_version_names_python_platform_and_libraries() -> None:
    out = walletctl("--version").stdout
    lines = out.splitlines()
    assert lines[0] == f"walletctl {__version__}"
    assert lines[1] == (f"Python {platform.python_version()} "
                        f"({platform.python_implementation()}) on {platform.platform()}")
    text = " ".join(" ".join(lines[2:]).split())
    assert text.startswith("libraries: "), out
    for name in LIBRARIES:
        try:
            expected = f"{name} {version(name)}"
        except Exception:
            expected = f"{name} not installed"
        assert expected in text, f"{expected!r} missing from --version:\n{out}"
    assert all(len(line) <= 80 for line in lines[2:]), out
