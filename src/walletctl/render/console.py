"""The two consoles: stdout for data, stderr for diagnostics. NO_COLOR is respected by Rich."""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def _console(**options: object) -> Console:
    from rich.console import Console

    class _Console(Console):
        def _render_buffer(self, buffer: Any) -> str:
            text: str = super()._render_buffer(buffer)
            if self.is_terminal:
                return text
            # Piped or redirected: no padding to the table's width (trailing blanks) that a
            # script, a diff or a pager would carry along.
            return "\n".join(line.rstrip(" ") for line in text.split("\n"))

        def on_broken_pipe(self) -> None:
            # Rich would exit 1 here; the CLI's one boundary ends quietly with status 141.
            self.quiet = True
            raise BrokenPipeError

    return _Console(**options)  # type: ignore[arg-type]


@lru_cache(maxsize=1)
def _out() -> Console:
    return _console(file=sys.stdout, highlight=False, soft_wrap=False)


@lru_cache(maxsize=1)
def _err() -> Console:
    return _console(file=sys.stderr, highlight=False, soft_wrap=True)


def out() -> Console:
    """Console for data (stdout). Re-created when sys.stdout is swapped (CliRunner)."""
    if _out().file is not sys.stdout:
        _out.cache_clear()
    return _out()


def err() -> Console:
    """Console for diagnostics and progress (stderr)."""
    if _err().file is not sys.stderr:
        _err.cache_clear()
    return _err()


# C0 controls (but none of them kept), DEL and C1: shown as \x1b etc., never sent raw to
# a terminal (an argument's escape sequence would otherwise be echoed by an error)
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def escape_controls(text: str) -> str:
    """``text`` on one line with every control character written as ``\x1b``."""
    return " ".join(text.splitlines()).translate(_CONTROLS)


def print_error(message: str, hint: str | None = None) -> None:
    """The one-line error format: ``walletctl: error: ...`` (+ an optional hint line)."""
    sys.stderr.write(f"walletctl: error: {escape_controls(message)}\n")
    if hint:
        sys.stderr.write(f"hint: {escape_controls(hint)}\n")
    sys.stderr.flush()


def print_note(message: str) -> None:
    sys.stderr.write(f"walletctl: {escape_controls(message)}\n")
    sys.stderr.flush()


def print_hint(hint: str | None) -> None:
    """``hint: ...`` on stderr (after a note that says what stopped)."""
    if hint:
        sys.stderr.write(f"hint: {hint}\n")


def print_stderr(text: str = "") -> None:
    """A line on stderr as it is (a request trace, a confirmation's summary; empty: the line
    end a prompt left open when it was ended with Ctrl-D)."""
    sys.stderr.write(text + "\n")
