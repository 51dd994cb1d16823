"""No layer below cli and render writes to the terminal: ops, history, client, config, models
and the shared top-level modules return what happened, raise a WalletctlError, or call a
callback the command passed (a ``warn``, a ``note``); cli hands it to render, which alone
writes to stdout and stderr (docs/ARCHITECTURE.md). The sandbox server's own log is its
process's output and is not scanned here."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "walletctl"
QUIET = ("ops", "history", "client", "config", "models")
TOP = ("errors.py", "constants.py", "masking.py", "shipped.py", "__init__.py")
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}
TERMINAL = ("rich", "typer", "click")  # libraries whose job is writing to the terminal


def writes(tree: ast.AST) -> list[tuple[int, str]]:
    """Where ``tree`` writes to the terminal itself: print(), sys.stdout / sys.stderr (read
    or written), ``from sys import stdout``, and imports of Rich, Typer or Click."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("print", "breakpoint"):
            found.append((node.lineno, f"{node.func.id}()"))
        elif isinstance(node, ast.Attribute) and node.attr in STREAMS \
                and isinstance(node.value, ast.Name) and node.value.id == "sys":
            found.append((node.lineno, f"sys.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" \
                and any(alias.name in STREAMS for alias in node.names):
            found.append((node.lineno, "from sys import a stream"))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names]
            found += [(node.lineno, f"import {name}") for name in names
                      if name.split(".")[0] in TERMINAL]
    return found


def quiet_files() -> list[Path]:
    files = [path for package in QUIET for path in sorted((SRC / package).rglob("*.py"))]
    return files + [SRC / name for name in TOP]


def test_the_layers_below_render_write_nothing_to_the_terminal() -> None:
    files = quiet_files()
    assert len(files) > 50, files  # the packages are where the scan looks
    offenders = [f"{path.relative_to(SRC)}:{line}: {what}"
                 for path in files
                 for line, what in writes(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, "write to the terminal below render (return it, raise, or take a " \
                          "callback from the command):\n" + "\n".join(offenders)


def test_the_scan_finds_each_kind_of_write() -> None:
    """The scan is not blind: every form it forbids is found in a sample."""
    sample = ast.parse(
        "import sys\nfrom sys import stderr\nimport rich.console\nfrom typer import echo\n"
        "print('x')\nsys.stdout.write('x')\nfh = sys.stderr\n"
        "def f():\n    import click\n")
    assert sorted(what for _line, what in writes(sample)) == sorted([
        "from sys import a stream", "import rich.console", "import typer", "print()",
        "sys.stdout", "sys.stderr", "import click"])
    assert writes(ast.parse("import sys\nsys.exit(sys.maxsize)\nout.print('x')\n")) == []
