"""History entries as a Rich table, JSON, NDJSON or CSV (every field but the table's few)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from walletctl.history.store import ENTRY_FIELDS, Entry
from walletctl.render.output import emit, write_ndjson

OUTCOME_STYLES = {
    "approved": "green",
    "declined": "red",
    "refused": "magenta",
    "unknown": "bold yellow",
    "error": "red",
}


def entry_dict(entry: Entry) -> dict[str, Any]:
    return entry.to_dict()


def render_entries(entries: Iterable[Entry], fmt: str, *, path: str) -> None:
    if fmt == "ndjson":  # streamed: memory flat in the size of the history
        write_ndjson(entry_dict(e) for e in entries)
        return
    listed = list(entries)
    rows = [entry_dict(e) for e in listed]
    emit(fmt, rows, columns=ENTRY_FIELDS, table=lambda: _table(listed, path))


def _table(entries: Sequence[Entry], path: str) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from walletctl.render.console import out

    console = out()
    if not entries:
        console.print(f"No entries in {escape(path)} match.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Time (UTC)", no_wrap=True)
    table.add_column("Op", no_wrap=True)
    # The reference the action used, and the operator's reason on a second, dim line.
    table.add_column("Reference / reason", overflow="fold", ratio=1)
    table.add_column("Amount", justify="right", no_wrap=True)
    table.add_column("Outcome", no_wrap=True)
    table.add_column("User", overflow="fold", max_width=12)
    for e in entries:
        style = OUTCOME_STYLES.get(e.outcome, "")
        ref = escape(e.new_ref or e.original_ref or "")
        if e.reason:
            ref += f"\n[dim]{escape(e.reason)}[/]"
        amount = f"{e.amount} {e.currency}" if e.amount is not None else ""
        outcome = e.outcome + (f" ({e.exit_code})" if e.exit_code else "")
        table.add_row(
            str(e.id),
            e.time[:16].replace("T", " "),
            e.operation,
            ref,
            amount,
            f"[{style}]{outcome}[/]" if style else outcome,
            escape(e.os_user),
        )
    console.print(table)
    unknown = sum(1 for e in entries if e.outcome == "unknown")
    console.print(
        f"{len(entries)} entries"
        + (f", {unknown} unknown (resolve: walletctl history --unknown --reconcile)"
           if unknown else "")
    )
