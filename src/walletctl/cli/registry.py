"""walletctl's commands: name -> module and help line, and loading one when it runs.

The root group (:mod:`walletctl.cli.main`) lists the commands from :data:`COMMANDS` for
``walletctl --help`` and builds one with :func:`load_command` only when it is run, so
``walletctl --help`` and ``--version`` import no command module.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

# Every command, in --help order: name -> (module under walletctl.cli, one-line help).
# Modules are imported only when their command runs, so `walletctl --help`/`--version` stay
# cheap; tests/project/test_cli_layout.py keeps these help lines equal to the real ones.
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
        "order",
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
        "approvals",
        "Approve another operator's request to move money above the profile's approval "
        "amount (four eyes).",
    ),
    "approvals": ("approvals", "List approval requests (four eyes); show one, or refuse one."),
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


def load_command(name: str) -> Any:
    """Import the module of ``name`` and build its click command (None when unknown)."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module = importlib.import_module(f"walletctl.cli.{entry[0]}")
    holder = typer.Typer(rich_markup_mode=None, add_completion=False)
    module.register(holder)
    if not (holder.registered_commands or holder.registered_groups):
        return None
    built = typer.main.get_command(holder)
    from walletctl.cli.usage import finite_floats

    finite_floats(built)  # nan / inf refused by every float option (--timeout, --rate, ...)
    commands = getattr(built, "commands", None)
    command = commands.get(name) if commands is not None else built
    if command is None or command.name != name:
        return None
    from walletctl.cli.examples import epilog

    command.epilog = epilog(name) or command.epilog  # the money commands' --help examples
    return command
