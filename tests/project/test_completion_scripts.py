"""Completion scripts print from the installed tool, skip option values, and complete -o,
--type and -p values (bash's function driven directly; real shells: test_shell_completion.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_walletctl
from walletctl.cli.completions import SHELLS, shipped_script

SCRIPT = Path(__file__).resolve().parents[2] / "completions"


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_completion_command_prints_the_shipped_script(shell: str) -> None:
    argv = ["completion", shell]
    if shell == "bash":  # one as the installed tool prints it, in a process of its own
        proc = subprocess.run([sys.executable, "-m", "walletctl", *argv],
                              capture_output=True, text=True, timeout=60, check=True)
    else:
        proc = run_walletctl(argv)
        assert proc.returncode == 0, proc
    assert proc.stdout == (SCRIPT / SHELLS[shell]).read_text(encoding="utf-8")
    assert proc.stdout == shipped_script(shell)


def _complete(words: list[str], config: Path) -> list[str]:
    words_literal = " ".join(f"'{w}'" for w in words)
    probe = (f"source {SCRIPT / 'walletctl.bash'}; COMP_WORDS=({words_literal}); "
             f"COMP_CWORD={len(words) - 1}; _walletctl; echo \"${{COMPREPLY[*]}}\"")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True,
                         env={"WALLETCTL_CONFIG": str(config), "PATH": "/usr/bin:/bin"})
    return out.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_completion_skips_values_and_completes_them(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    config.write_text('[profiles.sandbox]\nbase_url = "http://x"\n[profiles.prod-eu]  # eu\n')
    assert "lookup" in _complete(["walletctl", "-p", "sandbox", ""], config)
    assert "serve" not in _complete(["walletctl", "-p", "sandbox", ""], config)
    assert _complete(["walletctl", "-p", ""], config) == ["sandbox", "prod-eu"]
    assert _complete(["walletctl", "--profile", "pr"], config) == ["prod-eu"]
    assert _complete(["walletctl", "-o", ""], config) == ["table", "json", "ndjson", "csv"]
    assert _complete(["walletctl", "lookup", "R", "-o", "n"], config) == ["ndjson"]
    assert _complete(["walletctl", "checkout", "--type", ""], config) == ["sale", "preauth"]
    assert _complete(["walletctl", "-p", "x", "sandbox", "ser"], config) == ["serve"]
    assert _complete(["walletctl", "completion", "f"], config) == ["fish"]


def test_generator_help_creates_nothing(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "walletctl.cli.completions", "--help"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=True)
    assert "usage:" in proc.stdout
    assert list(tmp_path.iterdir()) == []
