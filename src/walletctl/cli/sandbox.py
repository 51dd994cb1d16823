"""``walletctl sandbox``: run the local sandbox gateway, drive it headlessly, run the demo.

Commands: ``serve``, ``reset``, ``approve`` / ``decline`` / ``cancel`` REF, ``ledger``,
``values``, ``demo``; ``3ds`` ACCOUNT (:mod:`walletctl.cli.sandbox_3ds`). Nothing heavy is
imported at module import (``--help`` stays fast).
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from walletctl.cli.state import get_state
from walletctl.constants import Env, ExitCode
from walletctl.errors import WalletctlError
from walletctl.sandbox.config import DEFAULT_REQUEST_TIMEOUT

HELP = (
    "Local stateful sandbox gateway (redirect wallet endpoints 1-3, hosted approval "
    "page, faults, magic test values) and the one-command demo."
)
sandbox_app = typer.Typer(
    name="sandbox",
    help=HELP,
    no_args_is_help=True,
    rich_markup_mode=None,
)

_FAULTS = "Fault injection (loopback only; also per request: X-Sandbox-Fault header)"


class DemoFailed(WalletctlError):
    exit_code = ExitCode.SMOKE_FAILED


def register(app: typer.Typer) -> None:
    """Add ``walletctl sandbox ...`` to ``app``."""
    from walletctl.cli import sandbox_admin

    sandbox_admin.register(sandbox_app)
    from walletctl.cli import sandbox_3ds  # noqa: F401 - adds `sandbox 3ds` to sandbox_app

    app.add_typer(sandbox_app, name="sandbox", help=HELP)


@sandbox_app.command("serve")
def serve_cmd(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.", min=0, max=65535)] = 0,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="SQLite file (kept across restarts); default: in memory.",
                     envvar=Env.SANDBOX_DB, dir_okay=False),
    ] = None,
    amount_format: Annotated[
        str, typer.Option("--amount-format", help="minor (1234) or decimal (12.34) amounts.")
    ] = "minor",
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="Static PublicApiKey accepted for every merchant "
                     "(default: sandbox-api-key).", envvar=Env.SANDBOX_API_KEY),
    ] = None,
    public_url: Annotated[
        str | None, typer.Option("--public-url", help="Base URL used in redirectUrl links.")
    ] = None,
    clock_control: Annotated[
        bool, typer.Option("--clock-control", help="Enable POST /_sandbox/clock.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Less server logging.")] = False,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option("--allow-origin", help="Only this origin (repeatable; e.g. "
                     "https://shop.example) may call the browser-wallet routes from a page; "
                     "default: any."),
    ] = None,
    latency: Annotated[int, typer.Option(help="Added latency, ms.", min=0,
                                         rich_help_panel=_FAULTS)] = 0,
    jitter: Annotated[int, typer.Option(help="± jitter on the latency, ms.", min=0,
                                        rich_help_panel=_FAULTS)] = 0,
    error_rate: Annotated[float, typer.Option(help="Rate of 5xx before commit (0-1).",
                                              rich_help_panel=_FAULTS)] = 0.0,
    error_status: Annotated[int, typer.Option(help="The 5xx status to answer.",
                                              rich_help_panel=_FAULTS)] = 503,
    throttle_rate: Annotated[float, typer.Option(help="Rate of 429 answers (0-1).",
                                                 rich_help_panel=_FAULTS)] = 0.0,
    retry_after: Annotated[int, typer.Option(help="Retry-After seconds on 429.",
                                             rich_help_panel=_FAULTS)] = 1,
    drop_rate: Annotated[float, typer.Option(
        help="Rate of commit-then-drop-the-connection (0-1).", rich_help_panel=_FAULTS)] = 0.0,
    error_after_rate: Annotated[float, typer.Option(
        help="Rate of 5xx after commit (0-1).", rich_help_panel=_FAULTS)] = 0.0,
    seed: Annotated[int | None, typer.Option(help="Seed for reproducible faults.",
                                             rich_help_panel=_FAULTS)] = None,
    admin_token: Annotated[
        str | None,
        typer.Option("--admin-token", help="Token required (X-Sandbox-Token) on /_sandbox/* "
                     "admin routes; generated and printed on a non-loopback --host when not "
                     "given.", envvar=Env.SANDBOX_TOKEN, show_default=False),
    ] = None,
    service_secret: Annotated[
        str | None,
        typer.Option("--service-secret", help="Secret of the public key service "
                     "(Basic userId:secret); default: the --api-key when given, else "
                     "sandbox-secret.", envvar=Env.SANDBOX_SERVICE_SECRET, show_default=False),
    ] = None,
    request_timeout: Annotated[
        float,
        typer.Option("--request-timeout", metavar="SECONDS",
                     help="Close a connection that has not sent a complete request this many "
                     "seconds after connecting or after its previous response."),
    ] = DEFAULT_REQUEST_TIMEOUT,
    max_connections: Annotated[
        int,
        typer.Option("--max-connections", min=0,
                     help="Open connections at most; more are answered 503 (0: half the "
                     "process's file-descriptor limit)."),
    ] = 0,
    ready_file: Annotated[
        Path | None,
        typer.Option("--ready-file", help="Write the sandbox's URL to this file once it "
                     "accepts requests (removed when it stops); for CI services.",
                     dir_okay=False),
    ] = None,
    write_profile: Annotated[
        str | None,
        typer.Option("--write-profile", metavar="NAME", help="Save a ready profile for this "
                     "sandbox as NAME in the profiles file (a local sandbox's is replaced)."),
    ] = None,
    print_profile: Annotated[
        bool,
        typer.Option("--print-profile", help="Print a ready profiles file for this sandbox on "
                     "stdout (server messages go to stderr)."),
    ] = False,
) -> None:
    """Serve the sandbox gateway until Ctrl-C or SIGTERM (prints its URL, then a ready line)."""
    from walletctl.errors import UsageError
    from walletctl.sandbox.config import DEFAULT_API_KEY, FaultConfig, SandboxConfig
    from walletctl.sandbox.cors import parse_origins

    if amount_format not in ("minor", "decimal"):
        raise UsageError("--amount-format: must be minor or decimal")
    from walletctl.ops.sandbox_admin import check_token

    check_token(admin_token)
    try:
        faults = FaultConfig(
            latency_ms=latency, jitter_ms=jitter, error_rate=error_rate,
            error_status=error_status, throttle_rate=throttle_rate, retry_after=retry_after,
            drop_rate=drop_rate, error_after_rate=error_after_rate, seed=seed,
        )
        config = SandboxConfig(
            db_path=str(db) if db else None,
            amount_format=amount_format,  # type: ignore[arg-type]
            faults=faults,
            public_url=public_url,
            api_key=api_key or DEFAULT_API_KEY,
            # one configured secret closes every door: no default secret left to mint keys
            service_secret=service_secret or "",
            admin_token=admin_token or None,
            host=host,
            allow_clock_control=clock_control,
            quiet=quiet,
            allowed_origins=parse_origins(allow_origin or ()),
            request_timeout=request_timeout,
            max_connections=max_connections,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    import sqlite3

    from walletctl.sandbox.server import serve

    if ready_file is not None:
        _check_ready_file(ready_file)
    on_listen = _profile_writer(ctx, config, write_profile, print_profile)
    try:
        serve(host, port, config, ready_file=ready_file, on_listen=on_listen,
              out=sys.stderr if print_profile else None)
    except sqlite3.Error as exc:
        raise UsageError(f"--db {db}: cannot use this SQLite database ({exc})") from None
    except OSError as exc:
        in_use = getattr(exc, "errno", None) == errno.EADDRINUSE
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="--port 0 picks a free port (printed on the first line)" if in_use else None,
        ) from None


def _profile_writer(ctx: typer.Context, config: Any, name: str | None,
                    print_it: bool) -> Any:
    """The ``on_listen`` hook of --write-profile / --print-profile (None when neither)."""
    if name is None and not print_it:
        return None
    from walletctl.cli.sandbox_profile import profile_table, profile_text, write_profile
    from walletctl.config.profile import valid_profile_name
    from walletctl.errors import UsageError
    from walletctl.render.console import print_note
    from walletctl.sandbox.config import DEFAULT_API_KEY

    if name is not None and not valid_profile_name(name):
        raise UsageError(f"--write-profile {name!r}: use letters, digits, '-' and '_'")
    state = get_state(ctx)

    def hook(url: str) -> None:
        table = profile_table(url, amount_format=config.amount_format, api_key=config.api_key,
                              service_secret=config.service_secret, default_key=DEFAULT_API_KEY)
        if print_it:
            sys.stdout.write(profile_text(name or "sandbox", table))
            sys.stdout.flush()
        if name is not None:
            path = write_profile(state.config_path, name, table)
            print_note(f"profile {name!r} for {url} saved to {path}: "
                       f"`walletctl -p {name} lookup REF`")

    return hook


def _check_ready_file(path: Path) -> None:
    """Refuse an unusable --ready-file before anything is served."""
    from walletctl.errors import UsageError

    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"--ready-file {path}: is a directory")
    if not parent.is_dir():
        raise UsageError(f"--ready-file {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--ready-file {path}: the directory {parent} is not writable")


@sandbox_app.command("wait")
def wait_cmd(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="The sandbox's base URL, e.g. "
                                            "http://127.0.0.1:8765.")],
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Give up after this many seconds (exit 7).", min=0.0,
        max=86400.0)] = 30.0,
) -> None:
    """Wait until a sandbox answers its health route (exit 0), or time out (exit 7)."""
    from walletctl.ops.sandbox_wait import wait_ready
    from walletctl.render.sandbox import render_ready

    render_ready(wait_ready(url, timeout=timeout), get_state(ctx).output_format)


@sandbox_app.command("values")
def values_cmd(ctx: typer.Context) -> None:
    """Show the magic test amounts and the default credentials."""
    from walletctl.render.sandbox import render_values
    from walletctl.sandbox.config import DEFAULT_API_KEY, DEFAULT_SERVICE_SECRET
    from walletctl.sandbox.magic import MAGIC_HELP

    render_values(dict(MAGIC_HELP), get_state(ctx).output_format, api_key=DEFAULT_API_KEY,
                  service_secret=DEFAULT_SERVICE_SECRET)


# -- the demo ------------------------------------------------------------------------------


@sandbox_app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Run every step even after a failure.")
    ] = False,
) -> None:
    """Run a full scenario against an embedded sandbox, printing each real command.

    checkout (sale, approve) -> checkout (pre-authorisation, approve) -> capture part ->
    capture the rest -> refund part -> another pre-authorisation, approve, reverse ->
    lookup as a table. Then the sandbox stops.
    """
    from walletctl.render.fit import terminal_width
    from walletctl.sandbox.scenario import run_demo

    output = get_state(ctx).output
    if output is None or output == "table":
        failed = run_demo(sys.stdout, keep_going=keep_going, width=terminal_width())
    else:  # the transcript as data: {"transcript": [lines], "failed": step or null}
        import io

        from walletctl.render.sandbox import render_record

        buffer = io.StringIO()
        failed = run_demo(buffer, keep_going=keep_going)
        render_record({"transcript": buffer.getvalue().splitlines(), "failed": failed},
                      output, "")
    if failed:
        raise DemoFailed(f"demo step failed: {failed}")

