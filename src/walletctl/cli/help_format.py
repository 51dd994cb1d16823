"""``--help`` laid out for the terminal it is read on, down to 40 columns and below.

click's formatter never goes under 50 columns and keeps its example blocks (``\\b``) as
written, so a narrow terminal broke words wherever it liked. Here the width is the
terminal's (``$COLUMNS`` first, at most 80), an option list stacks (the option, then its
description under it) when two columns would not fit, and a line still too long is broken
between words: an example command with a `` \\`` so it stays one command to paste.
"""

from __future__ import annotations

import os
import re
from typing import Any

import click

MAX_WIDTH = 80
MIN_WIDTH = 18
_TWO_COLUMNS = 60  # narrower than this: options stacked, descriptions under them
_COMMAND = re.compile(r"^\s*(\$ )?walletctl\b")
_WORDS = re.compile(r"""(?:'[^']*'|"[^"]*"|\S)+""")


def help_width(max_width: int | None = None) -> int:
    """The columns help text may use: the terminal's (``$COLUMNS`` first), capped at
    ``max_width`` (80), less click's margin of 2."""
    import shutil

    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isascii() and columns.isdigit() and int(columns) > 0 \
        else shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return max(min(width, max_width or MAX_WIDTH) - 2, MIN_WIDTH)


class FittedHelpFormatter(click.HelpFormatter):
    """click's formatter, at the terminal's own width (no 50-column floor)."""

    def __init__(self, indent_increment: int = 2, width: int | None = None,
                 max_width: int | None = None) -> None:
        super().__init__(indent_increment, width or help_width(max_width), max_width)

    # click wraps with textwrap, which breaks after any hyphen (REF-⏎CAP2, --dry-⏎run): the
    # hyphens are held together while it wraps and given back in getvalue()
    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(_held(prog), _held(args), prefix)

    def write_text(self, text: str) -> None:
        # unwrapped here: getvalue() breaks each line between words (click's textwrap would
        # cut a word wider than the line, a URL or a VAR=value, in two)
        width, self.width = self.width, 1 << 20
        try:
            super().write_text(_held(text))
        finally:
            self.width = width

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = [(_held(first), _held(second)) for first, second in rows]
        if self.width >= _TWO_COLUMNS:
            super().write_dl(rows, col_max, col_spacing)
            return
        import textwrap

        indent = " " * self.current_indent
        for first, second in rows:
            self.write(f"{indent}{first}\n")
            if second:  # under the option, whole words only
                text = textwrap.fill(second, self.width, initial_indent=indent + "    ",
                                     subsequent_indent=indent + "    ",
                                     break_long_words=False, break_on_hyphens=False)
                self.write(text + "\n")

    def getvalue(self) -> str:
        return "\n".join(fit_line(line.rstrip(" "), self.width).replace(_HELD, "-")
                         for line in super().getvalue().split("\n"))


_HELD = "\u2011"  # a non-breaking hyphen while click wraps


def _held(text: str) -> str:
    return text.replace("-", _HELD)


def fit_line(line: str, width: int) -> str:
    """``line`` broken between words to ``width`` columns (an example command continued with
    `` \\``, a comment's words under its first, other text under its start); a single word
    wider stays whole."""
    if len(line) <= width:
        return line
    lead = len(line) - len(line.lstrip(" "))
    command = bool(_COMMAND.match(line))
    # a command continues indented, a comment as a comment, text under its own start
    hang = " " * (lead + 4) if command else " " * lead + (
        "  " if line.lstrip().startswith(("#", "$")) else "")
    room = width - (2 if command else 0)  # a command's lines end in " \"
    words = _WORDS.findall(line) if command else line.split()  # a quoted argument: one
    lines: list[str] = []
    current = " " * lead + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) <= room:
            current += " " + word
        else:
            lines.append(current)
            current = hang + word
    lines.append(current)
    return (" \\\n" if command else "\n").join(lines)


class FittedContext(click.Context):
    formatter_class = FittedHelpFormatter


def fit_help(command: click.Command) -> None:
    """``command`` and every subcommand lay their help out with :class:`FittedHelpFormatter`."""
    command.context_class = FittedContext
    for sub in getattr(command, "commands", {}).values():
        fit_help(sub)
