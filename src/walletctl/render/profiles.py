"""Rendering of the ``profile`` commands' results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from walletctl.render.console import print_note

if TYPE_CHECKING:
    from walletctl.ops.new_profile import Added


def render_added(output_format: str, added: Added) -> None:
    """``profile add``: its notes on stderr; in a data format, the record on stdout."""
    for note in added.notes:
        print_note(note)
    if output_format != "table":
        from walletctl.render.rows import emit_rows

        record = {"profile": added.name, "file": str(added.file), "saved": True,
                  "notes": added.notes, "reset": added.reset}
        emit_rows([record], output_format, document=record)
