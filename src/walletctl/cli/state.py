"""Global CLI state (set by the root callback) and the environment tests swap (:data:`ENV`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from walletctl.constants import Env

if TYPE_CHECKING:
    from walletctl.config.profile import Profile

OutputFormat = str  # a name in the registry of output formats (walletctl.render.formats)


@dataclass
class Environment:
    """Things tests swap: the HTTP transport, stdin/tty detection."""

    transport: Any = None  # httpx.BaseTransport for GatewayClient, when set
    stdin_isatty: bool | None = None  # None = ask sys.stdin
    stdout_isatty: bool | None = None
    no_input: bool = False  # --no-input / $WALLETCTL_NO_INPUT: no prompt, even on a terminal

    def is_interactive(self) -> bool:
        if self.no_input:
            return False
        return sys.stdin.isatty() if self.stdin_isatty is None else self.stdin_isatty

    def why_not_asked(self) -> str:
        """Why a question cannot be asked (the refusal's words)."""
        return "--no-input" if self.no_input else "no terminal to ask on"

    def stdout_is_terminal(self) -> bool:
        return sys.stdout.isatty() if self.stdout_isatty is None else self.stdout_isatty


ENV = Environment()


@dataclass
class State:
    profile_name: str | None = None
    config_path: Path | None = None
    output: OutputFormat | None = None  # None = table on a terminal, json when piped
    verbose: bool = False
    debug: bool = False
    timeout: float | None = None
    # What the user typed on the command line (not from the environment): carried into the
    # commands that hints and notes suggest (see :func:`command_line`).
    typed_profile: str | None = None
    typed_config: Path | None = None
    _profile: Profile | None = field(default=None, repr=False)

    @property
    def output_format(self) -> OutputFormat:
        if self.output is not None:
            return self.output
        return "table" if ENV.stdout_is_terminal() else "json"

    def profile(self) -> Profile:
        """Load (once) the selected profile; --timeout overrides its timeout."""
        if self._profile is None:
            from dataclasses import replace

            from walletctl.config.profiles_file import load_profile

            prof = load_profile(self.profile_name, self.config_path)
            if self.timeout is not None:
                prof = replace(prof, timeout=self.timeout)
            self._profile = prof
        return self._profile


def _global_words(state: object, command: str = "") -> list[str]:
    """``--config F`` and ``-p P`` as typed, unless ``command`` already chooses them (a
    ``profile show|set|check NAME`` names its profile; ``profile list|add|example`` select
    none; a ``--help`` needs neither)."""
    import shlex

    if not isinstance(state, State):
        return []
    words: list[str] = []
    has = f" {command} "
    if " --help " in has:
        return []
    if state.typed_config is not None and " --config " not in has:
        words += ["--config", shlex.quote(str(state.typed_config))]
    parts = command.split()
    named = parts[2:3] if parts[:1] == ["profile"] else []
    every = parts[:2] in (["profile", "list"], ["profile", "add"], ["profile", "example"])
    if state.typed_profile and not every and shlex.quote(state.typed_profile) not in named \
            and not any(f" {o} " in has or f" {o}=" in has for o in ("-p", "--profile")):
        words += ["-p", shlex.quote(state.typed_profile)]
    return words


def command_line(state: State | None, *words: str) -> str:
    """``walletctl WORDS... [--config F] [-p P]``: a command to suggest, with the profiles
    file and profile the user gave (so following a hint acts on the same profile). They go
    last, where walletctl also reads global options, so the command itself reads first."""
    return " ".join(["walletctl", *words, *_global_words(state, " ".join(words))])


def carry_options(text: str | None, state: object) -> str | None:
    """Every `` `walletctl ...` `` in a hint or note, with the user's --config / -p added."""
    if not text or not isinstance(state, State) or "`walletctl " not in text:
        return text
    import re

    def one(match: re.Match[str]) -> str:
        rest = match.group(1)
        return "`" + " ".join(["walletctl", rest, *_global_words(state, rest)]) + "`"

    return re.sub(r"`walletctl ([^`]*)`", one, text)


def get_state(ctx: click.Context) -> State:
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State(
            profile_name=os.environ.get(Env.PROFILE) or None,
            config_path=Path(p) if (p := os.environ.get(Env.CONFIG)) else None,
        )
    return root.obj
