"""A dry run's exact request(s), secrets already masked: nothing is sent. A table shows each
request as it would go on the wire (and says nothing was sent, on stderr); the data formats
hold a record per request."""

from __future__ import annotations

import sys
from typing import Any

from walletctl.render.formats import View, show
from walletctl.render.output import to_json


def render_dry_run(output_format: str, described: list[dict[str, Any]]) -> None:
    document = ({"dryRun": True, "requests": described} if len(described) > 1
                else {"dryRun": True, "request": described[0]})
    show(View(rows=[{"dryRun": True, "request": d} for d in described], document=document,
              table=lambda: _wire(described)), output_format)


def _wire(described: list[dict[str, Any]]) -> None:
    for d in described:
        sys.stdout.write(f"{d['method']} {d['url']}\n")
        for name, value in d["headers"].items():
            sys.stdout.write(f"{name}: {value}\n")
        if d["body"] is not None:
            sys.stdout.write("\n" + to_json(d["body"]) + "\n")
    sys.stderr.write("walletctl: dry run: nothing was sent\n")
