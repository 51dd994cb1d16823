"""Helpers shared by command modules: client construction, dry-run, confirmation, files.

Imported lazily from command bodies (it pulls in httpx via the client).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.cli.state import ENV, State
from walletctl.errors import RequestValidationError, UsageError

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient, PreparedCall


def make_client(state: State) -> GatewayClient:
    from walletctl.client.gateway import GatewayClient
    from walletctl.render.console import print_stderr

    return GatewayClient(
        state.profile(), transport=ENV.transport, trace=print_stderr if state.verbose else None
    )


def print_dry_run(state: State, calls: list[PreparedCall]) -> None:
    """The exact request(s) that would be sent, secrets masked; nothing is sent."""
    from walletctl.render.output import render_dry_run

    render_dry_run(state.output_format, [c.describe() for c in calls])


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

    from walletctl.render.console import print_stderr

    print_stderr(summary)
    try:
        answer = typer.confirm(f"Proceed with the {action}?", default=False, err=True)
    except typer.Abort:  # end of input (Ctrl-D) at the prompt: a "no", not a crash (exit 1)
        print_stderr()
        answer = False
    if not answer:
        raise UsageError(f"{action} cancelled: nothing was sent")


def ask_amount() -> Callable[[str], str] | None:
    """A prompt for a typed amount on a terminal (None without one)."""
    if not ENV.is_interactive():
        return None

    def ask(question: str) -> str:
        import typer

        from walletctl.render.console import print_stderr

        try:
            return str(typer.prompt(question, err=True))
        except typer.Abort:  # Ctrl-D: nothing typed
            print_stderr()
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
