"""The lazily-loaded command table and the shipped completions stay true to the real CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from walletctl.cli.completions import render_all
from walletctl.cli.registry import COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_static_help_line_matches_the_command(name: str) -> None:
    command = load_command(name)
    assert command is not None, (
        f"{name}: module walletctl.cli.{COMMANDS[name][0]} registers no such command"
    )
    real = (command.help or "").strip().split("\n\n")[0].replace("\n", " ")
    assert COMMANDS[name][1] == real, (
        f"COMMANDS[{name!r}] help line is stale: update walletctl/cli/registry.py to {real!r}"
    )


def test_unknown_command_is_none() -> None:
    assert load_command("no-such-command") is None


@pytest.mark.parametrize("filename", sorted(render_all()))
def test_shipped_completions_are_current(filename: str) -> None:
    """completions/ (the one copy: the wheel carries it, `walletctl completion SHELL` prints
    it) is exactly what the generator renders from the command tree now."""
    shipped = ROOT / "completions" / filename
    assert shipped.exists(), (
        f"completions/{filename} missing: run python -m walletctl.cli.completions")
    assert shipped.read_text(encoding="utf-8") == render_all()[filename], (
        f"completions/{filename} is stale: run `python -m walletctl.cli.completions`"
    )


def test_no_copies_inside_the_package() -> None:
    """The top-level folders are the only copy; the build puts them into the wheel."""
    for copy in ("src/walletctl/completions", "src/walletctl/sample-configs",
                 "src/walletctl/config/examples", "src/walletctl/man"):
        assert not (ROOT / copy).exists(), f"{copy}: the copy lives at the top of the repository"


def test_profile_example_prints_each_sample_config() -> None:
    from cli_runner import run_walletctl
    from walletctl.cli.completions import ARGUMENT_VALUES

    kinds = ARGUMENT_VALUES["profile example"].split()
    assert sorted(kinds) == sorted(p.stem for p in (ROOT / "sample-configs").glob("*.toml"))
    for kind in kinds:
        proc = run_walletctl(["profile", "example", kind])
        assert proc.returncode == 0, proc
        assert proc.stdout == (ROOT / "sample-configs" / f"{kind}.toml").read_text("utf-8")


def test_bash_completion_completes_commands_and_options(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    script = ROOT / "completions" / "walletctl.bash"
    probe = (
        f"source {script}; "
        'COMP_WORDS=(walletctl -p prod ca); COMP_CWORD=3; _walletctl; echo "${COMPREPLY[*]}"; '
        'COMP_WORDS=(walletctl capture --dr); COMP_CWORD=2; _walletctl; echo "${COMPREPLY[*]}"'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["capture"], out.stdout
    assert lines[1].split() == ["--dry-run"], out.stdout


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["lookup", "R-1", "-o", "json"], ["-o", "json", "lookup", "R-1"]),
        (
            ["-p", "x", "lookup", "R-1", "--output=csv", "-v"],
            ["-p", "x", "--output=csv", "-v", "lookup", "R-1"],
        ),
        (["profile", "list", "-o", "json"], ["-o", "json", "profile", "list"]),
        # smoke defines its own --profile: left alone
        (["smoke", "--profile", "ci", "-o", "json"], ["-o", "json", "smoke", "--profile", "ci"]),
        # after `--` nothing is an option
        (["lookup", "--", "-o"], ["lookup", "--", "-o"]),
        # a missing value is left for click to report
        (["lookup", "R-1", "-o"], ["lookup", "R-1", "-o"]),
        (["--version"], ["--version"]),
    ],
)
def test_global_options_after_the_command_are_hoisted(argv: list[str], expected: list[str]) -> None:

    from walletctl.cli.main import app, hoist_global_options

    ctx = app.make_context("walletctl", ["--help"], resilient_parsing=True)
    assert hoist_global_options(argv, app, ctx) == expected


def test_followup_commands_hand_their_results_to_render() -> None:
    """cli/followup.py parses options, calls ops and hands results to render/followup.py: no
    Rich, console or output writer of its own."""
    source = (ROOT / "src" / "walletctl" / "cli" / "followup.py").read_text(encoding="utf-8")
    for rendering in ("from rich", "render.console", "render.output", "render.fit", "emit("):
        assert rendering not in source, f"cli/followup.py renders ({rendering!r})"
    assert re.search(r"from walletctl\.render\.followup import \(?\s*render_applied,\s*"
                     r"render_result,", source)
