"""walletctl's commands: name -> module and help line, and loading one when it runs (so
``walletctl --help`` and ``--version`` import no command module)."""

from __future__ import annotations

import importlib
from typing import Any, Final

import click

# Every command, in --help order: name -> (module under walletctl.cli, one-line help: the
# command's own, or its docstring's first line; tests/project/test_cli_layout.py checks them).
COMMANDS: dict[str, tuple[str, str]] = {
    "checkout": (
        "checkout",
        "Create a checkout (spec 2.1) and print the redirect URL for the customer.",
    ),
    "capture": ("followup", "Capture an approved pre-authorisation (default: all that remains)."),
    "refund": (
        "followup",
        "Refund a captured sale or pre-authorisation (default: all still refundable).",
    ),
    "reverse": ("followup", "Reverse (release) an uncaptured pre-authorisation."),
    "lookup": (
        "lookup",
        "Show the transaction and its follow-ups (spec 2.5) as a table, JSON, NDJSON or CSV.",
    ),
    "order": (
        "lookup",
        "One order: the gateway's records, the history's entries, approvals, recon findings, "
        "the balance and a verdict; exit 13 naming each disagreement.",
    ),
    "keys": (
        "walletpay",
        "Fetch an API key and encryption key for the profile (public key service).",
    ),
    "account": ("walletpay", "Show a payment account (Get Payment Account), card number masked."),
    "authorize": (
        "walletpay",
        "Authorize (sale or pre-authorization) a payment account from the browser wallet.",
    ),
    "smoke": (
        "smoke",
        "Run end-to-end smoke scenarios against a profile's gateway or an embedded sandbox.",
    ),
    "sandbox": (
        "sandbox",
        "Local stateful sandbox gateway (redirect wallet endpoints 1-3, "
        "hosted approval page, faults, magic test values) and the one-command demo.",
    ),
    "profile": (
        "profile",
        "List, show, add, change, remove and check merchant profiles (profiles.toml).",
    ),
    "history": (
        "history",
        "List, verify and reconcile the history (audit log) of money movements: a local "
        "file, or a team's shared PostgreSQL database.",
    ),
    "approve": (
        "history",
        "Approve another operator's request to move money above the profile's approval "
        "amount (four eyes).",
    ),
    "approvals": ("history", "List approval requests (four eyes); show one, or refuse one."),
    "recon": (
        "recon",
        "Reconcile the history (and batch journals) with the gateway over a time window: "
        "exit 13 naming each mismatch.",
    ),
    "completion": (
        "completions",
        "Print the shell completion script for bash, zsh, fish or powershell.",
    ),
}


_BUILT: dict[str, Any] = {}


def load_command(name: str) -> Any:
    """Import the module of ``name`` and build its click command (None when unknown), once
    per process: click asks for it twice in a run (the global options' hoisting, then the
    dispatch), and building one from its Typer signature costs 2-13 ms. A click command
    keeps nothing of a run: each run parses into a context of its own."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    if name not in _BUILT:
        _BUILT[name] = _build(name, entry[0])
    return _BUILT[name]


def _build(name: str, module: str) -> Any:
    import typer

    holder = typer.Typer(rich_markup_mode=None, add_completion=False)
    importlib.import_module(f"walletctl.cli.{module}").register(holder)
    built = typer.main.get_command(holder)
    finite_floats(built)  # nan / inf refused by every float option (--timeout, --rate, ...)
    command = built.commands[name] if isinstance(built, click.Group) else built
    command.epilog = epilog(name) or command.epilog  # the money commands' --help examples
    from walletctl.cli.help_format import fit_help

    fit_help(command)  # help at the terminal's width, down to 40 columns
    return command


class _FiniteFloat(click.types.FloatParamType):
    """A float option that refuses nan and inf (click's range check lets nan through: a
    ``--timeout nan`` waited forever)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        import math

        result = super().convert(value, param, ctx)
        if isinstance(result, float) and not math.isfinite(result):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return result


class _FiniteFloatRange(_FiniteFloat, click.FloatRange):
    pass


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


# command -> ((what it does, the command line), ...): two or three each, lines <= 76 chars.
EXAMPLES: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "checkout": (
        ("a sale; prints the redirect URL for the customer",
         "walletctl -p sandbox checkout --amount 12.34 --ref ORDER-1001"),
        ("a pre-authorisation, opened in the browser",
         "walletctl checkout --amount 50 --type preauth --ref ORDER-1002 --open"),
        ("the exact request from a JSON file, sending nothing",
         "walletctl checkout --from-file order.json --dry-run"),
    ),
    "capture": (
        ("capture all that remains of an approved pre-authorisation",
         "walletctl capture ORDER-1002"),
        ("capture part of it, saying why",
         "walletctl capture ORDER-1002 --amount 20.00 --reason 'first parcel'"),
        ("a batch: check every row first, then send",
         "walletctl capture --batch captures.csv --dry-run"),
    ),
    "refund": (
        ("refund part of a sale (asks first on a terminal)",
         "walletctl refund ORDER-1001 --amount 5.00 --reason 'damaged item'"),
        ("refund all still refundable, without the question",
         "walletctl refund ORDER-1001 --yes"),
        ("a batch, with one result per row",
         "walletctl refund --batch refunds.csv --yes --results refunds.ndjson"),
    ),
    "reverse": (
        ("release an uncaptured pre-authorisation",
         "walletctl reverse ORDER-1002 --yes"),
        ("show the exact request, sending nothing",
         "walletctl reverse ORDER-1002 --dry-run"),
        ("a batch of reversals (CSV or JSONL rows), journaled and resumable",
         "walletctl reverse --batch stale.csv --yes"),
    ),
    "lookup": (
        ("the transaction and its follow-ups as a table",
         "walletctl lookup ORDER-1001"),
        ("the same as JSON, for a script",
         "walletctl lookup ORDER-1001 -o json"),
        ("pre-authorisations older than 6 days with something left to capture",
         "walletctl lookup --batch orders.csv --open --older-than 6d"),
    ),
    "authorize": (
        ("charge the account a browser wallet posted (event.detail JSON)",
         "walletctl authorize --event event.json --amount 12.34"),
        ("a pre-authorisation, the event read from stdin",
         "walletctl authorize --event - --amount 50 --type preauth < event.json"),
        ("show the exact request, sending nothing",
         "walletctl authorize --event event.json --amount 12.34 --dry-run"),
    ),
}


def epilog(command: str) -> str | None:
    """The ``--help`` epilog of ``command`` (click keeps a ``\\b`` paragraph as written)."""
    examples = EXAMPLES.get(command)
    if not examples:
        return None
    lines = ["\b", "Examples:"]
    for what, line in examples:
        lines += [f"  # {what}", f"  {line}"]
    return "\n".join(lines)
