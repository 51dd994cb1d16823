"""Rendering of ``walletctl sandbox`` results that are not transactions."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from walletctl.render.output import write_csv, write_json, write_ndjson

if TYPE_CHECKING:
    from walletctl.ops.sandbox_wait import Ready


def render_ready(ready: Ready, output: str) -> None:
    """``sandbox wait``: one line for people, one record for scripts."""
    record = {"url": ready.url, "ready": True, "waitedSeconds": round(ready.waited, 3),
              "attempts": ready.attempts, "version": ready.version,
              "amountFormat": ready.amount_format}
    if output == "json":
        write_json(record)
    elif output == "ndjson":
        write_ndjson([record])
    elif output == "csv":
        write_csv([record])
    else:
        sys.stdout.write(f"sandbox at {ready.url} is ready (waited {ready.waited:.2f} s, "
                         f"{ready.attempts} attempt{'s' if ready.attempts != 1 else ''})\n")
