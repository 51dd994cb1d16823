"""Rendering of ``walletctl sandbox drift``: a line per difference for people (with the
setting that would align it, or the design decision it touches), the report for scripts."""

from __future__ import annotations

from typing import Any

from walletctl.render.console import escape_controls, print_message
from walletctl.render.formats import View, show


def _line(diff: dict[str, Any]) -> str:
    where = f"#{diff['seq']} {diff['route']}" if diff["seq"] else diff["route"]
    why = (f"align with {diff['setting']}" if diff["setting"]
           else f"touches {diff['decision']}")
    return (f"{where}: {diff['field']}: recorded {diff['recorded']}, sandbox "
            f"{diff['sandbox']} ({why})")


def render_drift(report: Any, output: str) -> None:
    doc = report.to_json()

    def table() -> None:
        for diff in doc["differences"]:
            print_message(escape_controls(_line(diff)))
        skipped = sum(doc["skipped"].values())
        summary = (f"{doc['replayed']} exchanges replayed ({skipped} skipped: not replayable, "
                   "or after a difference on their order), "
                   f"{len(doc['differences'])} difference"
                   f"{'s' if len(doc['differences']) != 1 else ''}")
        if doc["settings"]:
            summary += "; settings that would align them: " + " ".join(doc["settings"])
        elif doc["agree"]:
            summary += ": the sandbox agrees with the recording"
        print_message(escape_controls(summary))

    rows = [{"kind": "difference", **d} for d in doc["differences"]]
    show(View(rows=rows, document=doc, table=table), output)
