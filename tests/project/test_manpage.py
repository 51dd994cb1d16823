"""man/walletctl.1: current with the command tree and the documented tables, and rendered by
the real ``man`` without a warning, naming every command, option, exit status and variable."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from walletctl.cli.completions import command_tree, render_from_checkout
from walletctl.constants import Env, ExitCode

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "man" / "walletctl.1"


def test_the_man_page_is_current() -> None:
    assert PAGE.exists(), "man/walletctl.1 missing: run `python -m walletctl.cli.completions`"
    assert PAGE.read_text(encoding="utf-8") == render_from_checkout(), (
        "man/walletctl.1 is stale: run `python -m walletctl.cli.completions` (a command, an "
        "option, the README's exit codes or docs/guide.md's environment table changed)")


@lru_cache(maxsize=1)
def rendered(page: Path = PAGE) -> tuple[str, str]:
    """(text, warnings) of ``man -l`` at 80 columns."""
    if shutil.which("man") is None:
        pytest.skip("LOUD SKIP: `man` (man-db) is not installed: .ci/run installs it")
    env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="", LC_ALL="C.UTF-8")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    proc = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True,
                          text=True, env=env, timeout=60, check=True)
    return proc.stdout, proc.stderr


def plain(text: str) -> str:
    """man's text without overstrike and with the hyphenation man adds at line ends undone."""
    import re

    text = re.sub(r".\x08", "", text)
    text = re.sub(r"\u2010\n\s*", "", text)  # a word hyphenated across lines
    return " ".join(text.replace("\u2010", "-").replace("\u2212", "-").split())


def test_man_renders_without_warnings() -> None:
    _text, warnings = rendered()
    assert warnings == "", f"man --warnings on man/walletctl.1:\n{warnings}"


def test_the_page_names_every_command_option_status_and_variable() -> None:
    text = plain(rendered()[0])
    assert "WALLETCTL(1)" in text
    for path, node in command_tree().items():
        if path:
            assert f"walletctl {path} " in text, f"command {path!r} missing from the man page"
        for option in node.options:
            for spelling in option.opts:
                assert spelling in text, f"{path or 'walletctl'} {spelling} missing"
    for code in ExitCode:
        assert f"{int(code)} {code.name}" in text, f"exit status {code.name} missing"
    for name, value in vars(Env).items():
        if name.isupper():
            assert value in text, f"environment variable {value} missing"
    for section in ("SYNOPSIS", "GLOBAL OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT",
                    "FILES", "profiles.toml"):
        assert section in text
