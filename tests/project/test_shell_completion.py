"""The completion scripts in the real shells, installed the README's way on a fresh account.

One tmux server for the module; each shell runs interactive in its own session with nothing
but HOME, PATH and TERM (``env -i``): its HOME is new, the README's install lines are run in
it, and a profiles file with two profiles stands at the default place. The test types
``walletctl -o <TAB>``, ``walletctl -p <TAB>``, ``walletctl ref<TAB>`` (and a few more) and
reads the screen. A shell that is not installed is skipped with a loud reason (.ci/run
installs bash-completion, zsh, fish and tmux); PowerShell is tested only where ``pwsh`` is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import walletctl

ROOT = Path(__file__).resolve().parents[2]
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")
# The install lines as README.md and docs/guide.md print them (checked below), run verbatim.
INSTALL = {
    "bash": "echo 'source <(walletctl completion bash)' >> ~/.bashrc",
    "bash-completion": "mkdir -p ~/.local/share/bash-completion/completions && walletctl "
                       "completion bash > ~/.local/share/bash-completion/completions/walletctl",
    "zsh": "mkdir -p ~/.zfunc && walletctl completion zsh > ~/.zfunc/_walletctl",
    "fish": "mkdir -p ~/.config/fish/completions && walletctl completion fish > "
            "~/.config/fish/completions/walletctl.fish",
}
ZSHRC = ("fpath=(~/.zfunc $fpath)", "autoload -Uz compinit && compinit")
PROFILES = '[profiles.sandbox]\nbase_url = "http://127.0.0.1:8765"\n\n[profiles.prod-eu]\n'


def loud_skip_unless(program: str, install: str = "") -> None:
    if shutil.which(program) is None:
        install = install or f".ci/run installs Debian's {program} package"
        pytest.skip(f"LOUD SKIP: {program} is not installed, so its completion is untested "
                    f"here ({install})")


@dataclass
class Account:
    home: Path
    work: Path  # the shells' working directory: holds a file named notes.txt
    path: str

    def run(self, line: str) -> None:
        """Run an install line in this account, as its user would."""
        env = {"HOME": str(self.home), "PATH": self.path}
        subprocess.run(["bash", "-c", line], env=env, cwd=self.work, check=True, timeout=60)


@pytest.fixture(scope="module")
def account() -> Iterator[Account]:
    base = Path(tempfile.mkdtemp(prefix="wctl-sh-"))  # short: tmux's socket lives here too
    home, work, bin_dir = base / "home", base / "work", base / "bin"
    for folder in (home, work, bin_dir):
        folder.mkdir()
    (work / "notes.txt").write_text("a file the value completions must not offer\n")
    config = home / ".config" / "walletctl"
    config.mkdir(parents=True)
    (config / "profiles.toml").write_text(PROFILES)
    source = Path(walletctl.__file__).resolve().parents[1]  # this tree's walletctl
    shim = bin_dir / "walletctl"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH='{source}' exec '{sys.executable}' -m walletctl "
                    '"$@"\n')
    shim.chmod(0o755)
    yield Account(home=home, work=work, path=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin")
    shutil.rmtree(base, ignore_errors=True)


class Tmux:
    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-S", str(self.socket), "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=30, check=True)
        return proc.stdout

    def screen(self, session: str) -> str:
        return self("capture-pane", "-p", "-t", session)

    def wait(self, session: str, ready: Callable[[str], bool], what: str,
             timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(session)
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{session}: waited {timeout} s for {what}; screen:\n"
                                     + screen.rstrip())
            time.sleep(0.1)


@pytest.fixture(scope="module")
def tmux(account: Account) -> Iterator[Tmux]:
    loud_skip_unless("tmux")
    server = Tmux(account.home.parent / "tmux.sock")
    yield server
    subprocess.run(["tmux", "-S", str(server.socket), "kill-server"], capture_output=True,
                   check=False, timeout=30)


PROMPT = "READY>"


def start(tmux: Tmux, account: Account, session: str, *command: str) -> None:
    env = ["env", "-i", f"HOME={account.home}", f"PATH={account.path}", "TERM=xterm",
           "LANG=C.UTF-8"]
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", "-c", str(account.work),
         " ".join([*env, *command]))
    tmux.wait(session, lambda s: PROMPT in s, "the prompt")


def complete(tmux: Tmux, session: str, typed: str, *expected: str, tabs: int = 1) -> str:
    """Type ``typed`` and TAB on a clean line; the screen once every expected word shows."""
    # Clear the line with the line editor's own keys (synchronous, unlike C-c's signal);
    # Escape closes fish's pager (in bash it would prefix the next key with Meta).
    tmux("send-keys", "-t", session, *(["Escape"] if session == "fish" else []),
         "C-e", "C-u", "C-l")
    tmux.wait(session, lambda s: s.strip() == PROMPT, "a clean prompt")
    tmux("send-keys", "-t", session, "-l", typed)
    for _ in range(tabs):
        tmux("send-keys", "-t", session, "Tab")
    return tmux.wait(session, lambda s: all(word in s for word in expected),
                     f"{', '.join(expected)} after {typed!r} + TAB")


def check_walletctl(tmux: Tmux, session: str, tabs: int) -> None:
    """The checks every shell passes (bash shows a list on the second TAB)."""
    screen = complete(tmux, session, "walletctl -o ", "table", "json", "ndjson", "csv",
                      tabs=tabs)
    assert "notes.txt" not in screen, f"file names offered as -o values:\n{screen}"
    screen = complete(tmux, session, "walletctl -p ", "sandbox", "prod-eu", tabs=tabs)
    assert "notes.txt" not in screen, f"file names offered as -p values:\n{screen}"
    complete(tmux, session, "walletctl ref", "walletctl refund", tabs=tabs)
    # option values are skipped when finding the command; global options after it complete
    complete(tmux, session, "walletctl -p sandbox sandbox ser", "sandbox serve", tabs=tabs)
    complete(tmux, session, "walletctl lookup R-1 -o nd", "-o ndjson", tabs=tabs)
    complete(tmux, session, "walletctl profile show ", "sandbox", "prod-eu", tabs=tabs)
    complete(tmux, session, "walletctl --config no", "--config notes.txt", tabs=tabs)


def test_the_readme_and_guide_print_these_install_lines() -> None:
    for doc in ("README.md", "docs/guide.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for shell, line in INSTALL.items():
            assert line in text, f"{doc}: the {shell} install line changed: {line}"
        for line in ZSHRC:
            assert line in text, f"{doc}: the ~/.zshrc line changed: {line}"


def test_bash_with_bash_completion(tmux: Tmux, account: Account) -> None:
    loud_skip_unless("bash")
    if not BASH_COMPLETION.exists():
        pytest.skip("LOUD SKIP: the bash-completion package is not installed "
                    "(.ci/run installs it)")
    # Debian's /etc/skel/.bashrc loads bash-completion; then the README's line
    (account.home / ".bashrc").write_text(f". {BASH_COMPLETION}\nPS1='{PROMPT}'\n")
    account.run(INSTALL["bash"])
    start(tmux, account, "bash", "bash", "-i")
    check_walletctl(tmux, "bash", tabs=2)
    complete(tmux, "bash", "walletctl capture --dr", "--dry-run", tabs=2)


def test_bash_completion_loads_the_script_from_the_user_directory(
    tmux: Tmux, account: Account
) -> None:
    """The other install: bash-completion finds the script on the first TAB."""
    loud_skip_unless("bash")
    if not BASH_COMPLETION.exists():
        pytest.skip("LOUD SKIP: the bash-completion package is not installed "
                    "(.ci/run installs it)")
    rc = account.home / "lazy.bashrc"
    rc.write_text(f". {BASH_COMPLETION}\nPS1='{PROMPT}'\n")
    account.run(INSTALL["bash-completion"])
    start(tmux, account, "bash-lazy", "bash", "--rcfile", str(rc), "-i")
    complete(tmux, "bash-lazy", "walletctl -o ", "table", "ndjson", tabs=2)
    complete(tmux, "bash-lazy", "walletctl ref", "walletctl refund", tabs=2)


def test_zsh_with_compinit(tmux: Tmux, account: Account) -> None:
    loud_skip_unless("zsh")
    account.run(INSTALL["zsh"])
    (account.home / ".zshrc").write_text("\n".join([*ZSHRC, f"PS1='{PROMPT}'", ""]))
    start(tmux, account, "zsh", "zsh", "-i")
    check_walletctl(tmux, "zsh", tabs=1)
    screen = complete(tmux, "zsh", "walletctl profile ", "add", "example", "remove")
    assert "Add a profile" in screen, f"no descriptions beside subcommands:\n{screen}"
    assert "unrecognized modifier" not in screen, screen
    assert "command not found" not in screen, screen
    complete(tmux, "zsh", "walletctl capture --dr", "capture --dry-run")
    complete(tmux, "zsh", "walletctl checkout --type ", "sale", "preauth")
    # a description's apostrophe is quoted for zsh, not dropped
    complete(tmux, "zsh", "walletctl approvals ", "Refuse another operator's request")


def test_fish(tmux: Tmux, account: Account) -> None:
    loud_skip_unless("fish")
    account.run(INSTALL["fish"])
    functions = account.home / ".config" / "fish" / "functions"
    functions.mkdir(parents=True, exist_ok=True)
    (functions / "fish_prompt.fish").write_text(f"function fish_prompt\n echo -n '{PROMPT}'\nend\n")
    (functions / "fish_greeting.fish").write_text("function fish_greeting\nend\n")
    start(tmux, account, "fish", "fish", "-i")
    check_walletctl(tmux, "fish", tabs=1)
    screen = complete(tmux, "fish", "walletctl checkout --type ", "sale", "preauth")
    assert "notes.txt" not in screen, screen
    # a description's apostrophe is quoted for fish, not dropped
    complete(tmux, "fish", "walletctl approvals ", "Refuse another operator's request")


def test_powershell(account: Account) -> None:
    """Not in Debian's archive: pwsh installs from Microsoft's packages (docs/guide.md)."""
    loud_skip_unless("pwsh", "PowerShell is not in Debian's archive: install it from "
                     "Microsoft's package repository to run this test")
    script = ROOT / "completions" / "walletctl.ps1"
    probe = (f". '{script}'; foreach ($line in @('walletctl -o ', 'walletctl -p ', "
             "'walletctl ref')) { (TabExpansion2 -inputScript $line -cursorColumn "
             "$line.Length).CompletionMatches.CompletionText -join ' ' }")
    env = dict(os.environ, HOME=str(account.home))
    out = subprocess.run(["pwsh", "-NoProfile", "-NonInteractive", "-Command", probe],
                         capture_output=True, text=True, env=env, timeout=60, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["table", "json", "ndjson", "csv"], out.stdout
    assert sorted(lines[1].split()) == ["prod-eu", "sandbox"], out.stdout
    assert lines[2].split() == ["refund"], out.stdout
