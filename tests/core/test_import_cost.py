"""``walletctl --help``, ``--version`` and each command's ``--help`` stay cheap (not timed).

Each runs in a fresh interpreter under ``python -X importtime``; the test fails if a heavy module
is imported, and names the chain of imports that pulled it in (so the fix is obvious).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from .conftest import write_profile

HEAVY = ("httpx", "pydantic", "fastapi", "uvicorn", "rich.table", "walletctl.sandbox.app",
         "importlib.metadata")  # --version reads the versions without it (a third of its time)
CORE_COMMANDS = ("checkout", "capture", "refund", "reverse", "lookup")
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|( *)(\S+)\s*$")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "walletctl", *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )


def import_chain(stderr: str, module: str) -> list[str]:
    """``[module, its importer, ..., top-level import]`` from -X importtime output."""
    entries = []
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if m:
            entries.append((len(m.group(1)) // 2, m.group(2)))
    for i, (level, name) in enumerate(entries):
        if name == module:
            chain, want = [name], level
            for lvl, parent in entries[i + 1 :]:  # importers are printed after what they import
                if lvl < want:
                    chain.append(parent)
                    want = lvl
            return chain
    return []


_SPY = """
import runpy, sys, traceback
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == TARGET:
            for f in traceback.extract_stack()[:-1]:
                if "walletctl" in f.filename:
                    print(f"  {f.filename}:{f.lineno}: {f.line}", file=sys.stderr)
            sys.stderr.write("--spy-end--\\n")
        return None
sys.meta_path.insert(0, Spy())
sys.argv = ["walletctl", *ARGS]
runpy.run_module("walletctl", run_name="__main__")
"""


def importing_lines(args: tuple[str, ...], module: str) -> str:
    """The walletctl source lines on the stack when ``module`` is first imported."""
    code = _SPY.replace("TARGET", repr(module)).replace("ARGS", repr(list(args)))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
        env=dict(os.environ, COLUMNS="120"),
    )
    return proc.stderr.split("--spy-end--", 1)[0].strip() if "--spy-end--" in proc.stderr else ""


@lru_cache(maxsize=1)
def all_commands() -> tuple[str, ...]:
    """The top-level commands listed by ``walletctl --help`` (core ones first)."""
    out = run("--help").stdout
    section = out.split("Commands:", 1)[1] if "Commands:" in out else ""
    names = [m.group(1) for m in re.finditer(r"^  ([a-z][a-z0-9-]*)", section, re.M)]
    return tuple(dict.fromkeys([*CORE_COMMANDS, *names]))


def check(args: tuple[str, ...], heavy: tuple[str, ...] = HEAVY) -> None:
    result = run(*args)
    assert result.returncode == 0, f"walletctl {' '.join(args)} failed:\n{result.stderr[-2000:]}"
    problems = []
    for module in heavy:
        chain = import_chain(result.stderr, module)
        if chain:
            where = importing_lines(args, module)
            problems.append(
                f"{module} imported"
                + (f" via {' <- '.join(chain[1:])}" if len(chain) > 1 else "")
                + (f"\n  walletctl lines on the stack:\n{where}" if where else "")
            )
    assert not problems, f"walletctl {' '.join(args)} imports heavy modules:\n" + "\n".join(
        problems
    )


def test_import_chain_parser_finds_the_importer() -> None:
    sample = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:        10 |         10 |       httpx._api\n"
        "import time:        20 |         30 |     httpx\n"
        "import time:         5 |         35 |   walletctl.client.gateway\n"
        "import time:         5 |         40 | walletctl.cli.lookup\n"
    )
    assert import_chain(sample, "httpx") == [
        "httpx", "walletctl.client.gateway", "walletctl.cli.lookup"
    ]
    assert import_chain(sample, "pydantic") == []


def test_the_command_list_is_found() -> None:
    found = all_commands()
    for name in CORE_COMMANDS:
        assert name in found, found
    assert len(found) >= len(CORE_COMMANDS) + 1, f"--help lists no other command: {found}"


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("-h",)])
def test_top_level_is_cheap(args: tuple[str, ...]) -> None:
    """The root group is click's own: Typer builds a command only when one runs."""
    check(args, (*HEAVY, "typer"))


@pytest.mark.parametrize("command", CORE_COMMANDS)
def test_core_command_help_is_cheap(command: str) -> None:
    check((command, "--help"))


def test_every_other_command_help_is_cheap() -> None:
    failures = []
    for command in all_commands():
        if command in CORE_COMMANDS:
            continue
        try:
            check((command, "--help"))
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n\n".join(failures)


def test_a_command_that_sends_imports_no_trio(tmp_path: Path, api_key: str) -> None:
    """httpcore imports trio where it is installed (Selenium brings it) only to pick locks for
    code run under trio; walletctl's own process never runs any, and leaves it out (45 ms of
    every command that sends)."""
    pytest.importorskip("trio")  # the case: trio installed beside walletctl
    config = write_profile(tmp_path, "http://127.0.0.1:9")  # nothing listens: not connected
    env = dict(os.environ, WALLETCTL_CONFIG=str(config),
               WALLETCTL_AUDIT_LOG=str(tmp_path / "history.sqlite3"))
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "walletctl", "lookup",
                             "REF-1"], capture_output=True, text=True, env=env, timeout=60,
                            check=False)
    assert "could not connect" in result.stderr, result.stderr[-2000:]  # it did try to send
    assert import_chain(result.stderr, "httpx"), "the lookup did not import the client"
    imported = [m.group(2) for m in map(_LINE.match, result.stderr.splitlines())
                if m and m.group(2).split(".")[0] == "trio"]
    # "trio" itself may be listed: the refused import, a few microseconds each time
    assert set(imported) <= {"trio"}, imported
