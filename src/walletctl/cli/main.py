"""The walletctl Typer app and its single error boundary.

Everything the command line can get wrong, Click's own errors included, ends as walletctl's
own errors do (``walletctl: error: ...`` and a hint; usage errors exit 2, with "did you mean"
for unknown commands and options). A stdout closed by its reader (``walletctl lookup REF |
head -1``) ends quietly with status 141, as a Unix tool killed by SIGPIPE does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from walletctl.cli.help_format import FittedContext
from walletctl.cli.registry import COMMANDS, load_command
from walletctl.cli.state import get_state
from walletctl.constants import MAX_TIMEOUT, Env, ExitCode
from walletctl.render import formats

# click's exceptions (usage errors, --help exits) pass through the boundary untouched.
_PASS_THROUGH: tuple[type[BaseException], ...] = (
    click.exceptions.Exit, click.Abort, click.ClickException)

def hoist_global_options(args: list[str], group: Any, ctx: click.Context) -> list[str]:
    """Move the global options given after the command name (`walletctl lookup REF -o json`)
    in front of it, unless that command defines an option of the same name itself (e.g.
    `smoke --profile`)."""
    # the root's options but --version -> whether each takes a value
    globals_ = {o: not p.is_flag for p in group.params if p.name != "version" for o in p.opts}
    position = _command_position(args, globals_)
    if position is None or args[position] not in COMMANDS:
        return args
    command = group.get_command(ctx, args[position])
    rest = args[position + 1 :]
    hoisted, kept = _split_globals(rest, globals_, _command_options(command, rest))
    return args[:position] + hoisted + [args[position]] + kept


def _command_position(args: list[str], globals_: dict[str, bool]) -> int | None:
    """Where the first bare word is, when it is a command (a leading option's value is not)."""
    position = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    while position is not None and position > 0 and globals_.get(args[position - 1]):
        position = next(
            (i for i in range(position + 1, len(args)) if not args[i].startswith("-")), None
        )
    return position


def _command_options(command: Any, rest: list[str]) -> set[str]:
    """The options of ``command`` (and of its subcommand named in ``rest``): never hoisted."""
    sub_name = next((a for a in rest if not a.startswith("-")), None)
    sub = getattr(command, "commands", {}).get(sub_name) if sub_name else None
    return {name for cmd in (command, sub) if cmd is not None for param in cmd.params
            for name in (*param.opts, *param.secondary_opts)}


def _split_globals(rest: list[str], globals_: dict[str, bool],
                   own: set[str]) -> tuple[list[str], list[str]]:
    """(the global options in ``rest``, with their values; the words left for the command)."""
    hoisted: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            kept.extend(rest[i:])
            break
        name, eq, _value = word.partition("=")
        takes_value = globals_.get(name)
        if takes_value is None or name in own or (eq and not takes_value):
            kept.append(word)
        elif takes_value and not eq:
            if i + 1 >= len(rest):
                kept.append(word)  # let click report the missing value
            else:
                hoisted.extend(rest[i : i + 2])
                i += 1
        else:
            hoisted.append(word)
        i += 1
    return hoisted, kept


class _BoundaryGroup(click.Group):
    """The root group: lazy subcommands, and the error boundary (domain errors become one
    stderr line and their exit code). A plain click group: the commands are written with
    Typer and built when one runs (:func:`walletctl.cli.registry.load_command`), so
    ``walletctl --help`` and ``--version`` do not import Typer (a sixth of their time)."""

    context_class = FittedContext  # help at the terminal's width, down to 40 columns

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Any:
        return load_command(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, hoist_global_options(args, self, ctx))
        except _PASS_THROUGH as exc:  # a bad global option: its message stays short too
            _shorten_click_message(exc)
            raise

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, help_line) for name, (_, help_line) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(  # type: ignore[override]
        self, args: list[str] | None = None, prog_name: str | None = None,
        complete_var: str | None = None, standalone_mode: bool = True, **extra: Any,
    ) -> Any:
        """Parse and run, with every error of the command line in walletctl's voice (used by
        ``walletctl`` itself and by test runners that call the app)."""
        code = run_command(self, list(sys.argv[1:] if args is None else args),
                           prog_name or "walletctl", extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: click.Context) -> object:
        from walletctl.errors import WalletctlError

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # a closed stdout is not an error, even with --debug: run_command ends quietly
        except WalletctlError as exc:
            # --debug adds the traceback; the exit code stays the documented one.
            from walletctl.cli.state import carry_options

            _fail(ctx, exc.exit_code, exc.message, carry_options(exc.hint, ctx.find_root().obj))
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM and SIGHUP (see run())
            _fail(ctx, ExitCode.INTERRUPTED, "interrupted")
        except _PASS_THROUGH as exc:
            _shorten_click_message(exc)
            raise
        except Exception as exc:  # a bug: never a traceback (it could show secrets) unless --debug
            _fail(ctx, ExitCode.ERROR, f"internal error: {type(exc).__name__}",
                  "run again with --debug and report it")
        except BaseException as exc:
            if type(exc).__name__ != "DeadlineExceeded":  # client.answer_guard's SIGALRM deadline
                raise
            # the deadline fired outside the request it guards (between two steps)
            _fail(ctx, ExitCode.NETWORK,
                  "no answer within the deadline (twice the profile's timeout)",
                  "if it was moving money, check with `walletctl lookup REF` before trying "
                  "again; a larger timeout (--timeout) may help")


def _fail(ctx: click.Context, code: int, message: str, hint: str | None = None) -> NoReturn:
    """The error line (and the traceback, with --debug) of the exception being handled."""
    from walletctl.render.console import print_error

    _traceback_if_debug(ctx)
    print_error(message, hint, code=int(code))
    ctx.exit(int(code))


def _shorten_click_message(exc: BaseException) -> None:
    """click repeats a bad value in its message: a 100k-character value stays one short line."""
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        exc.message = _shortened(message)  # type: ignore[attr-defined]


def _shortened(message: str) -> str:
    return message if len(message) <= 500 else message[:480] + "...(truncated)"


def _traceback_if_debug(ctx: click.Context) -> None:
    if getattr(ctx.find_root().obj, "debug", False) or "--debug" in sys.argv \
            or os.environ.get(Env.DEBUG, "") not in ("", "0"):
        import traceback

        traceback.print_exc(file=sys.stderr)


def _finite_timeout(_ctx: click.Context, _param: click.Parameter,
                    value: float | None) -> float | None:
    if value is not None and value != value:  # NaN passes click's range check
        raise click.BadParameter("must be a number of seconds, not nan")
    return value


# The libraries walletctl's behaviour depends on most (psycopg only with [postgres]).
LIBRARIES = ("typer", "click", "rich", "httpx", "pydantic", "fastapi", "uvicorn", "psycopg")


def installed_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Each distribution's version, read from the name of its ``NAME-VERSION.dist-info``
    directory on ``sys.path`` (the installed-project format's own naming). Importing
    ``importlib.metadata`` cost more than the rest of ``--version``; it reads only what this
    finds no directory for (an egg-info install), or "not installed"."""
    wanted = {name.replace("-", "_").lower(): name for name in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.scandir(entry or ".")
        except OSError:
            continue
        with listing:
            for item in listing:
                if item.name.endswith(".dist-info"):
                    name, _, number = item.name.removesuffix(".dist-info").partition("-")
                    key = name.replace(".", "_").lower()
                    if number and key in wanted:
                        found.setdefault(wanted[key], number)
    unfound = [name for name in names if name not in found]
    if unfound:
        from importlib.metadata import PackageNotFoundError, version

        for name in unfound:
            try:
                found[name] = version(name)
            except PackageNotFoundError:
                found[name] = "not installed"
    return found


def version_text() -> str:
    """What a bug report needs, read from the installed distributions' metadata without
    importing the libraries (``--version`` stays as cheap as ``--help``)."""
    import platform
    import textwrap

    from walletctl import __version__

    found = installed_versions(LIBRARIES)
    # wrapped at 79 columns, never inside "name version" (no-break spaces hold it together)
    items = ", ".join(f"{name} {found[name]}".replace(" ", "\xa0") for name in LIBRARIES)
    libraries = textwrap.fill(f"libraries: {items}", 79, subsequent_indent="  ",
                              break_long_words=False, break_on_hyphens=False)
    return (f"walletctl {__version__}\nPython {platform.python_version()} "
            f"({platform.python_implementation()}) on {platform.platform()}\n"
            + libraries.replace("\xa0", " ") + "\n")


def _version(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        from walletctl.render.output import write_text

        write_text(version_text())
        raise click.exceptions.Exit()


def _option(*names: str, help: str, **extra: Any) -> Any:
    """A root option, shown as the commands' options are (Typer's defaults: the env var and
    the default in the help)."""
    return click.Option(list(names), help=help, show_envvar=True, **extra)


def _root_options() -> list[click.Parameter]:
    return [
        _option("--profile", "-p", help="Merchant profile to use.", envvar=Env.PROFILE),
        _option("--config", help="Profiles file.", envvar=Env.CONFIG,
                type=click.Path(dir_okay=False, path_type=Path)),
        _option("--output", "-o", help=f"{' | '.join(formats.names())} (default: table on a "
                "terminal, json when piped)."),
        _option("--verbose", "-v", is_flag=True,
                help="Trace requests and responses (masked)."),
        _option("--timeout", help="Request timeout in seconds (overrides the profile).",
                type=click.FloatRange(0.1, MAX_TIMEOUT), callback=_finite_timeout),
        _option("--debug", is_flag=True, help="Show tracebacks of internal errors.",
                envvar=Env.DEBUG),
        _option("--no-input", envvar=Env.NO_INPUT, is_flag=True, help="Never ask: a "
                "question (a confirmation, a production profile's name, an amount) is "
                "refused with exit 2 and nothing is sent, on a terminal too."),
        _option("--log-format", envvar=Env.LOG_FORMAT, metavar="text|json", default="text",
                show_default=True, help="json: every stderr line is one JSON object (level, "
                "message, hint, code; batch and smoke progress as events)."),
        _option("--version", is_flag=True, callback=_version, is_eager=True,
                expose_value=False,
                help="Show the versions of walletctl, Python and its libraries."),
    ]


@click.pass_context
def main(ctx: click.Context, profile: str | None, config: Path | None, output: str | None,
         verbose: bool, timeout: float | None, debug: bool, no_input: bool,
         log_format: str) -> None:
    """Operate the gateway's wallets from a terminal, a batch job or CI."""
    from click.core import ParameterSource

    state = get_state(ctx)
    if profile is None and os.environ.get(Env.PROFILE, "x").strip() == "":
        raise click.BadParameter(f"${Env.PROFILE} is set but empty: it must name a profile "
                                 "(unset it for the default one)", param_hint="--profile")
    if profile is not None and not profile.strip():
        raise click.BadParameter("must name a profile, not be empty (leave it out for the "
                                 "default one)", param_hint="--profile")
    state.profile_name = profile
    state.config_path = config
    typed = (ParameterSource.COMMANDLINE,)
    state.typed_profile = profile if ctx.get_parameter_source("profile") in typed else None
    state.typed_config = config if ctx.get_parameter_source("config") in typed else None
    if output is not None:
        if output not in formats.names():
            raise click.BadParameter(
                f"must be one of {', '.join(formats.names())}", param_hint="--output"
            )
        state.output = output
    if log_format not in LOG_FORMATS:
        raise click.BadParameter("must be text or json", param_hint="--log-format")
    from walletctl.cli.state import ENV

    ENV.no_input = no_input
    state.verbose = verbose
    state.timeout = timeout
    state.debug = debug


app = _BoundaryGroup(
    name="walletctl",
    callback=main,
    params=_root_options(),
    help="Terminal tool for the gateway's redirect wallet (WalletV2) and browser wallet "
    "(WalletPay), with a local sandbox gateway.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP behave exactly like Ctrl-C: a money move in flight is reported as
    an unknown outcome (exit 8), anything else exits 130; a batch stops cleanly. A signal
    the parent set to be ignored (``nohup``) stays ignored."""
    import signal

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _interrupt)


def read_answer(prompt: str = "") -> str:
    """Click's prompts read through this instead of ``input()``. ``input()`` writes the
    question and starts its read with no point between where Python runs a signal handler,
    so a Ctrl-C landing there was only acted on after the next Enter; here the wait for a
    line is a loop that runs the handler within a fifth of a second."""
    import select

    sys.stdout.write(prompt)  # click points stdout at stderr while it asks with err=True
    sys.stdout.flush()
    if os.name == "posix" and sys.stdin.isatty():
        while not select.select([sys.stdin], [], [], 0.2)[0]:
            pass
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    # httpcore imports trio, where it is installed, only to pick its locks for async code run
    # under trio; walletctl's process runs none (its client is synchronous, the sandbox runs
    # on asyncio). Where Selenium brought trio along, the import was 45 ms of every command
    # that sends; marked missing here, in walletctl's own process only.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    install_signal_handlers()
    click.termui.visible_prompt_func = read_answer
    # A connection's generator closed by the garbage collector after a timeout (httpcore)
    # would print "Exception ignored in ... Traceback" on stderr at exit: the command's
    # outcome is already reported, so such leftovers are not shown (WALLETCTL_DEBUG shows them)
    if not os.environ.get(Env.DEBUG):
        sys.unraisablehook = lambda _unraisable: None
    try:
        app(args=argv, prog_name="walletctl")
    except SystemExit as exc:
        # An interrupt before the error boundary runs (while parsing, loading a command):
        # click turns it into "Aborted!" and exit 1; the documented code is 130.
        abort = exc.__context__
        if exc.code == 1 and isinstance(getattr(abort, "__cause__", None), KeyboardInterrupt):
            raise SystemExit(int(ExitCode.INTERRUPTED)) from None
        raise


# --------------------------------------------------------------------------- usage errors


MIN_COLUMNS = 20  # the narrowest terminal walletctl lays anything out for


XDG_DIRS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
            "XDG_RUNTIME_DIR")


def sane_environment() -> None:
    """What the environment says that cannot be meant is ignored before anything reads it:
    an XDG base directory that is not an absolute path (the XDG spec: ignored, the default
    is used), and terminal sizes that are not numbers (:func:`ignore_bad_sizes`)."""
    for name in XDG_DIRS:
        value = os.environ.get(name)
        if value is not None and not os.path.isabs(value):
            del os.environ[name]
    ignore_bad_sizes()


def ignore_bad_sizes() -> None:
    """``COLUMNS`` / ``LINES`` that are not a positive number are ignored (Rich and click read
    them too: ``COLUMNS=0`` would lay every table out in no width at all); a width below
    MIN_COLUMNS counts as MIN_COLUMNS."""
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is None:
            continue
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or not text.strip("0"):
            del os.environ[name]
            continue
        number = min(int(text), 999_999) if len(text) <= 7 else 999_999
        if name == "COLUMNS":
            number = max(number, MIN_COLUMNS)
        if str(number) != value:
            os.environ[name] = str(number)


LOG_FORMATS = ("text", "json")


def _log_format(args: list[str]) -> str:
    """--log-format's value, read before parsing (so that a usage error is logged in it too):
    the last one given, else $WALLETCTL_LOG_FORMAT."""
    chosen = os.environ.get(Env.LOG_FORMAT, "text")
    for i, word in enumerate(args):
        if word == "--":
            break
        if word == "--log-format" and i + 1 < len(args):
            chosen = args[i + 1]
        elif word.startswith("--log-format="):
            chosen = word.partition("=")[2]
    return chosen


def run_command(command: click.Command, args: list[str], prog_name: str,
                extra: dict[str, Any]) -> int:
    """Parse ``args`` and invoke ``command``; returns the process exit status."""
    sane_environment()
    # pydantic looks for plugins in every installed distribution's entry points when a
    # first model validates (about 12 ms of each command); walletctl's models use none
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if _log_format(args) != "json":  # the console is imported by what writes to it, if any
        return _run_command(command, args, prog_name, extra)
    from walletctl.render.console import json_log

    with json_log(True):
        return _run_command(command, args, prog_name, extra)


def _run_command(command: click.Command, args: list[str], prog_name: str,
                 extra: dict[str, Any]) -> int:
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

            print_error(message, hint, code=code)
    except BrokenPipeError:
        return closed_pipe()
    return code


def _sentence(text: str) -> str:
    """Click's ``No such option '--x'.`` -> ``no such option '--x'``."""
    text = text.strip().rstrip(".")
    if text[:2].isalpha() and text[:2] != text[:2].upper():
        text = text[0].lower() + text[1:]
    return text


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
    # `lookup` / `sandbox serve` (empty at the root)
    path = ctx.command_path.partition(" ")[2] if ctx is not None else fallback_path
    where = f"walletctl {path}".strip()
    message, hint = _described(exc, ctx, where)
    message = _shortened(message)
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
    from difflib import get_close_matches

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
