"""Running the root command: Click's own errors in walletctl's voice, and closed pipes.

Everything the command line can get wrong ends the same way as walletctl's own errors::

    walletctl: error: lookup: missing REF (usage: walletctl lookup [OPTIONS] REF)
    hint: see `walletctl lookup --help`

exit 2 (usage). Unknown commands and options get "did you mean". A stdout closed by its
reader (``walletctl lookup REF | head -1``) ends quietly with status 141, as a Unix tool killed
by SIGPIPE does: no message, and nothing is flushed into the closed pipe at exit.
"""

from __future__ import annotations

import os
import sys
from difflib import get_close_matches
from typing import Any

import click

from walletctl.constants import ExitCode


def run_command(command: click.Command, args: list[str], prog_name: str,
                extra: dict[str, Any]) -> int:
    """Parse ``args`` and invoke ``command``; returns the process exit status."""
    try:
        with command.make_context(prog_name, args, **extra) as ctx:
            command.invoke(ctx)
        return int(ExitCode.OK)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:  # `walletctl`, `walletctl sandbox`
        return _guard_pipe(exc.ctx.get_help(), None, int(ExitCode.USAGE), plain=True)
    except click.UsageError as exc:
        message, hint = describe_usage_error(exc, _guess_path(command, args))
        return _guard_pipe(message, hint, int(ExitCode.USAGE))
    except click.ClickException as exc:  # e.g. click.FileError
        return _guard_pipe(_sentence(exc.format_message()), None, exc.exit_code)
    except click.Abort as exc:  # Ctrl-C (130) or end of input (2) at a prompt
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            return _guard_pipe("interrupted", None, int(ExitCode.INTERRUPTED))
        return _guard_pipe("aborted: no answer at the prompt", None, int(ExitCode.USAGE))
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        return closed_pipe()


def closed_pipe() -> int:
    """Point stdout at /dev/null (so the exit-time flush cannot fail) and return 141."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
            except (OSError, ValueError):  # not a real file (a test runner's buffer)
                pass
    return int(ExitCode.CLOSED_PIPE)


def _guard_pipe(message: str, hint: str | None, code: int, *, plain: bool = False) -> int:
    """Print an error (or, ``plain``, a help text) on stderr; return ``code``."""
    try:
        if plain:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()
        else:
            from walletctl.render.console import print_error

            print_error(message, hint)
    except BrokenPipeError:
        return closed_pipe()
    return code


def _sentence(text: str) -> str:
    """Click's ``No such option '--x'.`` -> ``no such option '--x'``."""
    text = text.strip().rstrip(".")
    if text[:2].isalpha() and text[:2] != text[:2].upper():
        text = text[0].lower() + text[1:]
    return text


def _command_path(ctx: click.Context | None) -> str:
    """``lookup`` / ``sandbox serve`` (empty at the root)."""
    if ctx is None:
        return ""
    return ctx.command_path.partition(" ")[2]


def _guess_path(command: click.Command, args: list[str]) -> str:
    """The command path named in ``args`` (for errors Click raises without a context)."""
    words: list[str] = []
    current: Any = command
    for arg in args:
        if arg.startswith("-") or not isinstance(current, click.Group):
            continue
        ctx = click.Context(current, info_name=arg)
        if arg not in current.list_commands(ctx):
            break
        words.append(arg)
        current = current.get_command(ctx, arg)
    return " ".join(words)


def describe_usage_error(exc: click.UsageError, fallback_path: str = "") -> tuple[str, str]:
    """(message, hint) for one of Click's usage errors."""
    ctx = exc.ctx
    path = _command_path(ctx) if ctx is not None else fallback_path
    where = f"walletctl {path}".strip()
    message, hint = _described(exc, ctx, where)
    if len(message) > 500:  # click repeats a bad value: a 100k-character one stays one line
        message = message[:480] + "...(truncated)"
    if path:
        message = f"{path}: {message}"
    return message, hint


def _described(exc: click.UsageError, ctx: click.Context | None,
               where: str) -> tuple[str, str]:
    import re

    hint = f"see `{where} --help`"
    if isinstance(exc, click.exceptions.NoSuchCommand):
        return _no_such_command(exc, ctx, where)
    if isinstance(exc, click.exceptions.NoSuchOption):
        if exc.possibilities:
            hint = "did you mean " + " or ".join(f"'{p}'" for p in exc.possibilities) + "?"
        return f"no such option {exc.option_name!r}", hint
    if isinstance(exc, click.MissingParameter) and exc.param is not None:
        return _missing(exc.param, ctx, where), hint
    message = _sentence(exc.format_message())
    return re.sub(r"'(-{1,2}[\w-]+)'", r"\1", message), hint


def _no_such_command(exc: click.exceptions.NoSuchCommand, ctx: click.Context | None,
                     where: str) -> tuple[str, str]:
    group = ctx.command if ctx is not None else None
    names = group.list_commands(ctx) if isinstance(group, click.Group) and ctx else []
    close = get_close_matches(exc.command_name, names, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(f"'{where} {c}'" for c in close) + "?"
    else:
        hint = f"commands: {', '.join(names)} (see `{where} --help`)"
    return f"no such command {exc.command_name!r}", hint


def _missing(param: click.Parameter, ctx: click.Context | None, where: str) -> str:
    if isinstance(param, click.Argument):
        name = (param.metavar or param.name or "ARGUMENT").upper()
        usage = ctx.command.collect_usage_pieces(ctx) if ctx is not None else []
        return f"missing {name} (usage: {where} {' '.join(usage)})"
    opts = "/".join(param.opts) if hasattr(param, "opts") else str(param.name)
    return f"missing option {opts}"


class _FiniteFloat(click.types.FloatParamType):
    """A float option that refuses nan and inf (click's range check lets nan through: a
    ``--timeout nan`` waited forever)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        return _finite(self, result, value, param, ctx)


class _FiniteFloatRange(click.FloatRange):
    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        return _finite(self, result, value, param, ctx)


def _finite(kind: click.ParamType[Any], result: Any, value: Any, param: click.Parameter | None,
            ctx: click.Context | None) -> Any:
    import math

    if isinstance(result, float) and not math.isfinite(result):
        kind.fail(f"{value!r} is not a finite number", param, ctx)
    return result


def finite_floats(command: Any) -> None:
    """Make every float option of ``command`` (and its subcommands) refuse nan and inf."""
    for param in getattr(command, "params", []):
        kind = param.type
        if type(kind) is click.FloatRange:
            param.type = _FiniteFloatRange(kind.min, kind.max, min_open=kind.min_open,
                                           max_open=kind.max_open, clamp=kind.clamp)
        elif type(kind) is click.types.FloatParamType:
            param.type = _FiniteFloat()
    for sub in (getattr(command, "commands", None) or {}).values():
        finite_floats(sub)
