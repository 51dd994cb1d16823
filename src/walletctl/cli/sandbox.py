"""``walletctl sandbox``: run the local sandbox gateway, and drive a running one (``--url``, else
the selected profile's gateway) through :mod:`walletctl.ops.sandbox_admin`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from walletctl.cli.common import confirm, refuse_production
from walletctl.cli.registry import COMMANDS
from walletctl.cli.state import ENV, command_line, get_state
from walletctl.constants import Env, ExitCode
from walletctl.errors import UsageError, WalletctlError
from walletctl.models.sandbox_values import (
    DEFAULT_API_KEY,
    DEFAULT_BODY_BUDGET,
    DEFAULT_HEADER_BUDGET,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
)
from walletctl.render.console import print_note

if TYPE_CHECKING:
    from walletctl.ops.sandbox_admin import Listening

sandbox_app = typer.Typer(name="sandbox", no_args_is_help=True, rich_markup_mode=None)


class DemoFailed(WalletctlError):
    exit_code = ExitCode.SMOKE_FAILED


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox", help=COMMANDS["sandbox"][1])


# -- the local sandbox -----------------------------------------------------------------------


@sandbox_app.command("serve")
def serve_cmd(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.", min=0, max=65535)] = 0,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="SQLite file (kept across restarts); default: in memory, "
                     "but with --write-profile NAME a file of NAME's in the user's state "
                     "directory.", envvar=Env.SANDBOX_DB, dir_okay=False),
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
    latency: Annotated[int, typer.Option(help="Added latency, ms.", min=0)] = 0,
    jitter: Annotated[int, typer.Option(help="± jitter on the latency, ms.", min=0)] = 0,
    error_rate: Annotated[float, typer.Option(help="Rate of 5xx before commit (0-1).")] = 0.0,
    error_status: Annotated[int, typer.Option(help="The 5xx status to answer.")] = 503,
    throttle_rate: Annotated[float, typer.Option(help="Rate of 429 answers (0-1).")] = 0.0,
    retry_after: Annotated[int, typer.Option(help="Retry-After seconds on 429.")] = 1,
    drop_rate: Annotated[float, typer.Option(
        help="Rate of commit-then-drop-the-connection (0-1).")] = 0.0,
    error_after_rate: Annotated[float, typer.Option(help="Rate of 5xx after commit (0-1).")] = 0.0,
    seed: Annotated[int | None, typer.Option(help="Seed for reproducible faults.")] = None,
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
    write_timeout: Annotated[
        float,
        typer.Option("--write-timeout", metavar="SECONDS",
                     help="Close a connection whose client has not taken (read) an answer "
                     "this many seconds after it was written."),
    ] = DEFAULT_WRITE_TIMEOUT,
    max_connections: Annotated[
        int,
        typer.Option("--max-connections", min=0,
                     help="Open connections at most; more are answered 503 (0: half the "
                     "process's file-descriptor limit)."),
    ] = 0,
    body_budget: Annotated[
        int,
        typer.Option("--body-budget", metavar="BYTES", min=1,
                     help="Bytes of request bodies held at once, across all connections; a "
                     "body that does not fit is answered 503."),
    ] = DEFAULT_BODY_BUDGET,
    header_budget: Annotated[
        int,
        typer.Option("--header-budget", metavar="BYTES", min=1,
                     help="Bytes of incomplete request heads held at once, across all "
                     "connections; a connection whose head does not fit is answered 503."),
    ] = DEFAULT_HEADER_BUDGET,
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
    replay: Annotated[
        Path | None,
        typer.Option("--replay", metavar="DIR", help="Answer from a recording of `sandbox "
                     "proxy --record DIR` (matching requests by route, body and order; "
                     "others 501) instead of the sandbox's own rules.", file_okay=False),
    ] = None,
) -> None:
    """Serve the sandbox gateway until Ctrl-C or SIGTERM (prints its URL, then a ready line)."""
    from walletctl.ops.sandbox_admin import ServeOptions, serve

    on_listen = _profile_writer(ctx, write_profile, print_profile)
    if ready_file is not None:
        _check_ready_file(ready_file)
    faults = {"latency_ms": latency, "jitter_ms": jitter, "error_rate": error_rate,
              "error_status": error_status, "throttle_rate": throttle_rate,
              "retry_after": retry_after, "drop_rate": drop_rate,
              "error_after_rate": error_after_rate, "seed": seed}
    serve(ServeOptions(
        host=host, port=port, db=db, amount_format=amount_format, api_key=api_key,
        service_secret=service_secret, admin_token=admin_token, public_url=public_url,
        clock_control=clock_control, quiet=quiet, allow_origin=tuple(allow_origin or ()),
        faults=faults, request_timeout=request_timeout, write_timeout=write_timeout,
        max_connections=max_connections, body_budget=body_budget, header_budget=header_budget,
        ready_file=ready_file, replay=replay, profile_name=write_profile),
        on_listen=on_listen, out=sys.stderr if print_profile else None)


def _profile_writer(ctx: typer.Context, name: str | None,
                    print_it: bool) -> Callable[[Listening], None] | None:
    """The ``on_listen`` hook of --write-profile / --print-profile (None when neither)."""
    if name is None and not print_it:
        return None
    from walletctl.config.profile import valid_profile_name
    from walletctl.ops.sandbox_admin import profile_table, profile_text, write_profile
    from walletctl.render.output import write_text

    if name is not None and not valid_profile_name(name):
        raise UsageError(f"--write-profile {name!r}: use letters, digits, '-' and '_'")
    state = get_state(ctx)

    def hook(served: Listening) -> None:
        url = served.url
        table = profile_table(url, amount_format=served.amount_format, api_key=served.api_key,
                              service_secret=served.service_secret, default_key=DEFAULT_API_KEY)
        if print_it:
            write_text(profile_text(name or "sandbox", table))
        if name is not None:
            path = write_profile(state.config_path, name, table)
            kept = f"; its ledger is kept in {served.db_path}" if served.db_path else ""
            print_note(f"profile {name!r} for {url} saved to {path}{kept}: "
                       f"`walletctl -p {name} lookup REF`")

    return hook


def _check_ready_file(path: Path) -> None:
    """Refuse an unusable --ready-file before anything is served."""
    parent = path.parent
    if path.is_dir():
        raise UsageError(f"--ready-file {path}: is a directory")
    if not parent.is_dir():
        raise UsageError(f"--ready-file {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--ready-file {path}: the directory {parent} is not writable")


@sandbox_app.command("proxy")
def proxy_cmd(
    upstream: Annotated[str, typer.Option(
        "--upstream", help="The gateway to forward to (in practice its test environment), "
        "e.g. https://test-gateway.example.", show_default=False)],
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.", min=0, max=65535)] = 0,
    ready_file: Annotated[Path | None, typer.Option(
        "--ready-file", help="Write the proxy's URL to this file once it accepts requests "
        "(removed when it stops).", dir_okay=False)] = None,
    record: Annotated[Path | None, typer.Option(
        "--record", metavar="DIR", help="Write each exchange to one file in DIR (an empty "
        "or new directory); secrets and card data masked.", file_okay=False)] = None,
    log_format: Annotated[str | None, typer.Option(
        "--log-format", metavar="text|json", help="Each violation on stderr as one line "
        "(text) or one JSON object (json); by default as walletctl's own --log-format.",
        show_default=False)] = None,
    amount_format: Annotated[str, typer.Option(
        "--amount-format", help="The amount format the traffic uses: minor (1234) or decimal "
        "(12.34).")] = "minor",
    timeout: Annotated[float, typer.Option(
        "--upstream-timeout", metavar="SECONDS", min=0.1, max=3600.0,
        help="Answer 504 when the upstream has not answered within this time.")] = 30.0,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", min=0, help="Open client connections at most (0: half the "
        "file-descriptor limit); also the connections to the upstream.")] = 0,
) -> None:
    """Forward traffic to a gateway unchanged, reporting every request and answer that
    breaks the rules the sandbox enforces (one stderr line each); optionally record it."""
    from walletctl.ops.fidelity import run_proxy
    from walletctl.render.console import log_json

    if ready_file is not None:
        _check_ready_file(ready_file)
    run_proxy(upstream, host=host, port=port, amount_format=amount_format,
              ready_file=ready_file, record=record,
              log_format=log_format or ("json" if log_json() else "text"), timeout=timeout,
              max_connections=max_connections)


@sandbox_app.command("drift")
def drift_cmd(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(
        metavar="DIR", help="A recording of `sandbox proxy --record DIR`.", file_okay=False)],
    amount_format: Annotated[str, typer.Option(
        "--amount-format", help="The sandbox's amount format: minor or decimal.")] = "minor",
    latency: Annotated[int, typer.Option(
        "--latency", help="The sandbox's added latency, ms.", min=0, max=10_000)] = 0,
) -> None:
    """Replay a recording against a fresh sandbox and compare the answers field by field;
    each difference names the setting that would align it (exit 13 on any difference)."""
    from walletctl.ops.fidelity import drift
    from walletctl.render.fidelity import render_drift

    report = drift(directory, amount_format=amount_format, latency_ms=latency)
    render_drift(report, get_state(ctx).output_format)
    raise typer.Exit(report.exit_code)


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
    from walletctl.ops.sandbox_admin import wait_ready
    from walletctl.render.sandbox import render_ready

    render_ready(wait_ready(url, timeout=timeout), get_state(ctx).output_format)


@sandbox_app.command("values")
def values_cmd(ctx: typer.Context) -> None:
    """Show the magic test amounts and the default credentials."""
    from walletctl.models.sandbox_values import DEFAULT_SERVICE_SECRET, MAGIC_HELP
    from walletctl.render.sandbox import render_values

    render_values(dict(MAGIC_HELP), get_state(ctx).output_format, api_key=DEFAULT_API_KEY,
                  service_secret=DEFAULT_SERVICE_SECRET)


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
    from functools import partial

    from walletctl.ops.sandbox_admin import demo
    from walletctl.render.sandbox import render_demo

    failed = render_demo(partial(demo, keep_going=keep_going), get_state(ctx).output)
    if failed:
        raise DemoFailed(f"demo step failed: {failed}")


# -- a running sandbox: its URL, and the options every such command takes ------------------

SandboxURL = Annotated[str | None, typer.Option(
    "--url", help="Sandbox base URL (default: the selected profile's base_url).")]
AdminToken = Annotated[str | None, typer.Option(
    "--admin-token", help="The sandbox's admin token (X-Sandbox-Token), needed when it serves "
    "on a non-loopback host.", envvar=Env.SANDBOX_TOKEN, show_default=False)]
Reference = Annotated[str, typer.Argument(help="The checkout's clientSystemTransactionId.")]


def _sandbox_url(ctx: typer.Context, url: str | None,
                 command: str) -> tuple[str, dict[str, str]]:
    """The sandbox URL and, when a profile is used, its merchantId/storeId filter (a
    production profile is refused: these commands act on a sandbox only)."""
    import re

    if url is not None and not url.strip():  # `--url ""` must not fall back to the profile
        raise UsageError("--url: must not be empty (omit it to use the profile's gateway)")
    if url is not None and not (len(url) <= 2048 and url.isprintable()
                                and re.fullmatch(r"https?://[^\s/?#]+[^\s]*", url)):
        raise UsageError("--url: must be an http(s) URL such as http://127.0.0.1:8765")
    if url:
        return url.rstrip("/"), {}
    prof = get_state(ctx).profile()
    refuse_production(prof, command=f"sandbox {command}")
    return prof.base_url.rstrip("/"), {"merchantId": prof.merchant_id, "storeId": prof.store_id}


# -- deciding a checkout, reset, ledger ------------------------------------------------------


def _decision(action: str, help_text: str) -> None:
    @sandbox_app.command(action, help=help_text)
    def command(ctx: typer.Context, ref: Reference, url: SandboxURL = None,
                admin_token: AdminToken = None) -> None:
        from walletctl.models.inputs import check_inputs
        from walletctl.ops.sandbox_admin import amount_format, decide
        from walletctl.render.sandbox import render_decision

        check_inputs(references={"REF": ref})  # the rule every command applies: exit 4
        base, params = _sandbox_url(ctx, url, action)
        data = decide(base, ref, action, params=params, token=admin_token)
        state = get_state(ctx)
        # the record's amounts: the profile's format, or (--url) the sandbox's
        render_decision(data, state.output_format, ref,
                        lambda: amount_format(base) if url else state.profile().amount_format)


_decision("approve", "Approve a pending checkout, as the customer would on the hosted page.")
_decision("decline", "Decline a pending checkout (state Declined).")
_decision("cancel", "Cancel a pending checkout (state Cancelled).")


@sandbox_app.command("reset")
def reset_cmd(ctx: typer.Context, url: SandboxURL = None,
              admin_token: AdminToken = None,
              yes: Annotated[bool, typer.Option(
                  "--yes", "-y", help="Do not ask on a terminal (a script is never asked).")
              ] = False) -> None:
    """Delete every transaction and issued key of a running sandbox (asked first on a
    terminal)."""
    from walletctl.ops.sandbox_admin import reset
    from walletctl.render.sandbox import render_record

    base, _ = _sandbox_url(ctx, url, "reset")
    if not yes and ENV.is_interactive():
        confirm(f"sandbox reset: every transaction and issued key of the sandbox at {base} "
                "will be deleted", yes=False, action="reset")
    render_record(reset(base, token=admin_token), get_state(ctx).output_format,
                  f"sandbox at {base} reset")


@sandbox_app.command("ledger")
def ledger_cmd(ctx: typer.Context, url: SandboxURL = None,
               admin_token: AdminToken = None) -> None:
    """List every transaction a running sandbox holds."""
    from walletctl.ops.sandbox_admin import ledger
    from walletctl.render.sandbox import render_ledger

    base, _ = _sandbox_url(ctx, url, "ledger")
    with ledger(base, token=admin_token) as transactions:
        render_ledger(transactions, get_state(ctx).output_format, base)


@sandbox_app.command("faults")
def faults_cmd(
    ctx: typer.Context,
    latency: Annotated[int | None, typer.Option(
        "--latency", help="Added latency, ms.", min=0, max=10_000)] = None,
    jitter: Annotated[int | None, typer.Option(
        "--jitter", help="± jitter on the latency, ms.", min=0, max=10_000)] = None,
    error_rate: Annotated[float | None, typer.Option(
        "--error-rate", help="Rate of 5xx before commit (0-1).", min=0.0, max=1.0)] = None,
    error_status: Annotated[int | None, typer.Option(
        "--error-status", help="The 5xx status to answer.", min=500, max=599)] = None,
    throttle_rate: Annotated[float | None, typer.Option(
        "--throttle-rate", help="Rate of 429 answers (0-1).", min=0.0, max=1.0)] = None,
    retry_after: Annotated[int | None, typer.Option(
        "--retry-after", help="Retry-After seconds on 429.", min=0, max=60)] = None,
    drop_rate: Annotated[float | None, typer.Option(
        "--drop-rate", help="Rate of commit-then-drop-the-connection (0-1).",
        min=0.0, max=1.0)] = None,
    error_after_rate: Annotated[float | None, typer.Option(
        "--error-after-rate", help="Rate of 5xx after commit (0-1).", min=0.0, max=1.0)] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for reproducible faults.")] = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Remove every fault (then apply the options given, if any).")] = False,
    url: SandboxURL = None,
    admin_token: AdminToken = None,
) -> None:
    """Show, set or clear a running sandbox's faults (for /api/v5 routes; loopback only).

    Without options it shows them; each option sets one fault and keeps the others;
    --clear removes them all.
    """
    from walletctl.ops.sandbox_admin import faults
    from walletctl.render.sandbox import render_faults

    base, _ = _sandbox_url(ctx, url, "faults")
    given = {"latency_ms": latency, "jitter_ms": jitter, "error_rate": error_rate,
             "error_status": error_status, "throttle_rate": throttle_rate,
             "retry_after": retry_after, "drop_rate": drop_rate,
             "error_after_rate": error_after_rate, "seed": seed}
    changes = {key: value for key, value in given.items() if value is not None}
    data = faults(base, changes, clear=clear, token=admin_token)
    render_faults(data, get_state(ctx).output_format, base)


@sandbox_app.command("seed")
def seed_cmd(
    ctx: typer.Context,
    count: Annotated[int, typer.Argument(help="How many transactions (1-100000).",
                                         min=1, max=100_000)],
    kind: Annotated[str, typer.Option(
        "--kind", help="preauth (for capture/reverse --batch) or sale (for refund --batch).")
    ] = "preauth",
    amount: Annotated[str, typer.Option(
        "--amount", help="Every amount (12.50) or a range (5.00-50.00; drawn at random, never "
        "a magic value ending in 01-05).")] = "1.00-100.00",
    currency: Annotated[str | None, typer.Option(
        "--currency", help="ISO 4217 (default: the profile's, else EUR).")] = None,
    ref: Annotated[str, typer.Option(
        "--ref", help="Reference pattern: {n} is the number from 1 (e.g. seed-{n:04}), {run} "
        "six hex characters new on each run.")] = "seed-{run}-{n:05}",
    csv_path: Annotated[str, typer.Option(
        "--csv", help="Write ref,amount,currency here (- for stdout): the input of "
        "`walletctl capture --batch`.")] = "seed.csv",
    merchant_id: Annotated[str | None, typer.Option(
        "--merchant-id", help="merchantId (default: the profile's).")] = None,
    store_id: Annotated[str | None, typer.Option(help="storeId (default: the profile's).")] = None,
    random_seed: Annotated[int | None, typer.Option(
        "--random-seed", help="Seed of the amounts drawn from a range (same seed, same "
        "amounts).")] = None,
    url: SandboxURL = None,
    admin_token: AdminToken = None,
) -> None:
    """Create COUNT approved pre-authorisations (or sales) in a running sandbox at once, and
    write them as a CSV ready for `walletctl capture --batch` (refund --batch for sales)."""
    from walletctl.ops.sandbox_admin import SeedPlan
    from walletctl.ops.sandbox_admin import seed as seed_transactions
    from walletctl.render.sandbox import render_seed

    base, params = _sandbox_url(ctx, url, "seed")
    state = get_state(ctx)
    plan = SeedPlan(count=count, kind=kind, amount=amount, pattern=ref,
                    currency=currency or (None if url else state.profile().currency) or "EUR",
                    merchant_id=merchant_id or params.get("merchantId"),
                    store_id=store_id or params.get("storeId"), random_seed=random_seed)
    result = seed_transactions(base, plan, csv_path, token=admin_token, stdout=sys.stdout)
    op = "capture" if kind == "preauth" else "refund"
    render_seed(result, state.output_format, next_step=command_line(state, op, "--batch",
                                                                    csv_path))


RESULTS = {"pass": "success", "fail": "failure"}


@sandbox_app.command("3ds")
def three_ds_cmd(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(
        help="The Card (PAN_ONLY) account's transactionAccountId.")],
    result: Annotated[str, typer.Option(
        "--result", help="pass (transStatus Y: the authorization is approved) or fail "
                         "(N: declined, AuthenticationFailed).")] = "pass",
    url: SandboxURL = None,
    merchant_id: Annotated[str | None, typer.Option(
        "--merchant-id", help="The account's merchant (default: the profile's).")] = None,
    store_id: Annotated[str | None, typer.Option(
        "--store-id", help="The account's store (default: the profile's).")] = None,
    admin_token: AdminToken = None,
) -> None:
    """Run the sandbox's 3DS challenge for a Card account; print the result for authorize."""
    from walletctl.models.inputs import check_identifier
    from walletctl.ops.sandbox_admin import three_ds_challenge
    from walletctl.render.sandbox import render_three_ds

    outcome = RESULTS.get(result.strip().lower())
    if outcome is None:
        raise UsageError(f"--result: must be pass or fail (got {result[:20]!r})")
    check_identifier(account, "ACCOUNT", max_length=255)
    base, _ = _sandbox_url(ctx, url, "3ds")
    if not (merchant_id and store_id):  # with --url too, the account's merchant is the profile's
        profile = get_state(ctx).profile()
        merchant_id, store_id = merchant_id or profile.merchant_id, store_id or profile.store_id
    answer = three_ds_challenge(base, account, merchant_id=merchant_id, store_id=store_id,
                                outcome=outcome, token=admin_token)
    render_three_ds(answer, get_state(ctx).output_format)
