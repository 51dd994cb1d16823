"""Helpers shared by command modules: client construction, dry-run, confirmation, files.

Imported lazily from command bodies (it pulls in httpx via the client).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.cli.state import ENV, State
from walletctl.errors import RequestValidationError, UsageError

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient, PreparedCall


def _trace(line: str) -> None:
    sys.stderr.write(line + "\n")


def make_client(state: State) -> GatewayClient:
    from walletctl.client.gateway import GatewayClient

    return GatewayClient(
        state.profile(), transport=ENV.transport, trace=_trace if state.verbose else None
    )


def print_dry_run(state: State, calls: list[PreparedCall]) -> None:
    """The exact request(s) that would be sent, secrets masked; nothing is sent."""
    from walletctl.render.output import to_json

    described = [c.describe() for c in calls]
    if state.output_format == "ndjson":  # one line per request
        for d in described:
            sys.stdout.write(to_json({"dryRun": True, "request": d}, indent=None) + "\n")
        return
    if state.output_format == "json":
        doc: Any = described[0] if len(described) == 1 else described
        sys.stdout.write(
            to_json(
                {"dryRun": True, "requests": described}
                if len(described) > 1
                else {"dryRun": True, "request": doc}
            )
            + "\n"
        )
        return
    for d in described:
        sys.stdout.write(f"{d['method']} {d['url']}\n")
        for name, value in d["headers"].items():
            sys.stdout.write(f"{name}: {value}\n")
        if d["body"] is not None:
            sys.stdout.write("\n" + to_json(d["body"]) + "\n")
    sys.stderr.write("walletctl: dry run: nothing was sent\n")


def confirm(summary: str, *, yes: bool, action: str) -> None:
    """Ask on a terminal; refuse without one unless --yes."""
    if yes:
        return
    if not ENV.is_interactive():
        raise UsageError(
            f"refusing to send the {action} without confirmation: no terminal to ask on",
            hint="pass --yes to confirm non-interactively",
        )
    import typer

    sys.stderr.write(summary + "\n")
    try:
        answer = typer.confirm(f"Proceed with the {action}?", default=False, err=True)
    except typer.Abort:  # end of input (Ctrl-D) at the prompt: a "no", not a crash (exit 1)
        sys.stderr.write("\n")
        answer = False
    if not answer:
        raise UsageError(f"{action} cancelled: nothing was sent")


def ask_amount() -> Callable[[str], str] | None:
    """A prompt for a typed amount on a terminal (None without one)."""
    if not ENV.is_interactive():
        return None

    def ask(question: str) -> str:
        import typer

        try:
            return str(typer.prompt(question, err=True))
        except typer.Abort:  # Ctrl-D: nothing typed
            sys.stderr.write("\n")
            return ""

    return ask


def read_request_file(path: Path) -> dict[str, Any]:
    """A JSON or TOML request file (by extension; JSON numbers become Decimal).

    Special files are refused, size and nesting are bounded, duplicate keys are refused
    (``walletctl.ops.user_files``).
    """
    from walletctl.ops.user_files import read_document

    where = str(path)
    data = read_document(path, "--from-file", toml=path.suffix.lower() == ".toml")
    if not isinstance(data, dict):
        raise RequestValidationError([(f"--from-file {where}", "must hold one JSON/TOML object")])
    return data
