"""The two consoles: stdout for data, stderr for diagnostics. NO_COLOR is respected by Rich."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TextIO

from walletctl.models.plain import escaped

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


_CONSOLES: dict[str, Console] = {}


def _on(stream: str, soft_wrap: bool) -> Console:
    """The console of ``sys.<stream>`` (made anew when a test runner swaps the stream)."""
    found = _CONSOLES.get(stream)
    if found is None or found.file is not getattr(sys, stream):
        found = _CONSOLES[stream] = _console(file=getattr(sys, stream), highlight=False,
                                             soft_wrap=soft_wrap)
    return found


def out() -> Console:
    return _on("stdout", soft_wrap=False)


def err() -> Console:
    return _on("stderr", soft_wrap=True)


def escape(text: str) -> str:
    """``text`` shown as it is in Rich markup (Rich is imported on first use): what the
    history, the database or the gateway hold reaches a terminal through here, each control,
    bidi or invisible character written out (``\x1b``, ``\u202e``), never sent raw."""
    from rich.markup import escape as escape_markup

    return escape_markup(escaped(text))


def escape_controls(text: str) -> str:
    """``text`` on one line with every control character written as ``\x1b`` (an
    argument's escape sequence would otherwise be echoed by an error)."""
    return escaped(" ".join(text.splitlines()))


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (East Asian wide characters take two)."""
    from unicodedata import east_asian_width

    return sum(2 if east_asian_width(c) in "WF" else 1 for c in text)


def wrap_words(text: str, width: int, indent: str = "  ",
               measure: Callable[[str], int] = cell_width) -> str:
    """``text`` with each line longer than ``width`` broken between words, never inside one
    (continuation lines start with ``indent``; a word wider than the terminal stands on its
    own line): the wrapping of every message on a terminal."""
    import re

    lines: list[str] = []
    for line in text.split("\n"):
        if measure(line) <= width:
            lines.append(line)
            continue
        # (spaces before, word): the spaces inside a line (aligned columns) are kept; a
        # `command with its arguments` is one word while it fits on a line of its own
        pieces: list[tuple[str, str]] = []
        for space, word in re.findall(r"( *)(`[^`]*`\S*|\S+)", line):
            if " " in word and measure(word) > width - len(indent):
                inner = re.findall(r"( *)(\S+)", word)
                pieces += [(space + inner[0][0], inner[0][1]), *inner[1:]]
            else:
                pieces.append((space, word))
        current = ""
        for space, word in pieces:
            for part in _parts(word, width - len(indent), measure):
                if current.strip() and measure(current + space + part) > width:
                    lines.append(current)
                    current = indent + part
                else:
                    current += space + part
                space = ""
        lines.append(current)
    return "\n".join(lines)


def _parts(word: str, room: int, measure: Callable[[str], int]) -> list[str]:
    """``word``; when wider than ``room``, a list of settings (``a=1;b=2``) split after its
    ``;``s."""
    if measure(word) <= room or ";" not in word.rstrip(";"):
        return [word]
    parts = [part + ";" for part in word.split(";")]
    parts[-1] = parts[-1][:-1]
    joined: list[str] = []
    for part in filter(None, parts):
        if joined and measure(joined[-1] + part) <= room:
            joined[-1] += part
        else:
            joined.append(part)
    return joined


def terminal_columns(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to ($COLUMNS first); None when it is
    not a terminal (piped text is never wrapped)."""
    import os

    try:
        if not stream.isatty():
            return None
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(20, int(columns))
    try:
        return max(20, os.get_terminal_size(fd).columns)
    except OSError:
        return 80


def write_fitted(stream: TextIO, text: str, indent: str = "  ") -> None:
    """``text`` and a line end on ``stream``, wrapped at words on a terminal."""
    width = terminal_columns(stream)
    stream.write((wrap_words(text, width, indent) if width else text) + "\n")


def print_message(text: str, indent: str = "  ") -> None:
    """A result or a message on stdout."""
    write_fitted(sys.stdout, text, indent)
    sys.stdout.flush()


# --------------------------------------------------------------------------- --log-format json


class JsonLines:
    """``sys.stderr`` under ``--log-format json``: every line written becomes one JSON object.
    A line that already is one (:func:`log_event`) passes; any other text (a library's, a
    progress line) is wrapped as ``{"level": "info", "message": ...}``. Never a terminal:
    nothing is drawn live or coloured."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        import json

        if not line.strip():
            return
        if line.startswith("{") and line.endswith("}"):
            try:
                if isinstance(json.loads(line), dict):
                    self.inner.write(line + "\n")
                    return
            except ValueError:
                pass
        self.inner.write(json.dumps({"level": "info", "message": line.rstrip()},
                                    ensure_ascii=False) + "\n")

    def flush(self) -> None:
        self.inner.flush()

    def close_line(self) -> None:
        """Write what is left of an unfinished line."""
        if self._pending:
            self._line(self._pending)
            self._pending = ""
        self.inner.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.inner, "encoding", "utf-8") or "utf-8"

    def writable(self) -> bool:
        return True


def log_json() -> bool:
    """Diagnostics are JSON lines (``--log-format json``)."""
    return isinstance(sys.stderr, JsonLines)


@contextmanager
def json_log(on: bool) -> Iterator[None]:
    """For the duration: stderr as :class:`JsonLines` when ``on``."""
    if not on or log_json():
        yield
        return
    inner = sys.stderr
    wrapper = JsonLines(inner)
    sys.stderr = wrapper
    try:
        yield
    finally:
        with suppress(OSError, ValueError):
            wrapper.close_line()
        if sys.stderr is wrapper:
            sys.stderr = inner


def log_event(level: str, message: str | None = None, **fields: object) -> None:
    """One JSON object on stderr (``--log-format json``): level, message, then ``fields``
    that are not None (hint, code, an event's counts)."""
    import json

    record: dict[str, object] = {"level": level}
    if message is not None:
        record["message"] = " ".join(message.splitlines())[:MAX_LINE]
    record.update({k: v for k, v in fields.items() if v is not None})
    sys.stderr.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    sys.stderr.flush()


MAX_LINE = 1000  # characters of an error or hint line, its prefix included


def capped(line: str) -> str:
    """``line`` cut to MAX_LINE characters (a 100k-character path stays one readable line)."""
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 14] + "...(truncated)"


def print_error(message: str, hint: str | None = None, *, code: int | None = None) -> None:
    """The one-line error format: ``walletctl: error: ...`` (+ an optional hint line), each
    at most MAX_LINE characters; with --log-format json one object (``code``: the exit code)."""
    if log_json():
        log_event("error", message, hint=hint and hint[:MAX_LINE], code=code)
        return
    write_fitted(sys.stderr, capped(f"walletctl: error: {escape_controls(message)}"))
    if hint:
        write_fitted(sys.stderr, capped(f"hint: {escape_controls(hint)}"))
    sys.stderr.flush()


def print_note(message: str) -> None:
    if log_json():
        log_event("info", message)
        return
    write_fitted(sys.stderr, capped(f"walletctl: {escape_controls(message)}"))
    sys.stderr.flush()


def print_warning(message: str) -> None:
    """``walletctl: warning: ...`` on stderr (with --log-format json: level warning)."""
    if log_json():
        log_event("warning", message)
        return
    print_note(f"warning: {message}")


def print_stopped(why: str | None, hint: str | None, what: str = "stopped") -> None:
    """Why a run stopped, when it did, and the hint on what to do about it (stderr)."""
    if why and log_json():
        log_event("warning", f"{what}: {why}", hint=hint)
    elif why:
        print_note(f"{what}: {why}")
        if hint:
            write_fitted(sys.stderr, f"hint: {hint}")


def print_stderr(text: str = "") -> None:
    """A line on stderr (empty: the line end a prompt ended with Ctrl-D left open); a
    question's summary holds what the history holds, shown escaped (its own line ends
    kept)."""
    write_fitted(sys.stderr, "\n".join(map(escaped, text.split("\n"))))
