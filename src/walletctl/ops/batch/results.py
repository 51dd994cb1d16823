"""Per-row results, streamed to a file as rows finish: NDJSON (default) or CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import IO, Any, Literal

ResultsFormat = Literal["ndjson", "csv"]
FIELDS = (
    "line", "op", "ref", "new_ref", "amount", "currency", "status", "transaction_id", "state",
    "attempts", "earlier_run", "detail",
)


def results_format(path: Path) -> ResultsFormat:
    """From the extension: ``.csv`` -> CSV; ``.ndjson`` / ``.jsonl`` / anything else -> NDJSON."""
    return "csv" if path.suffix.lower() == ".csv" else "ndjson"


class ResultsWriter:
    def __init__(self, path: Path, fmt: ResultsFormat | None = None) -> None:
        self.path = path
        self.fmt = fmt or results_format(path)
        self._fh: IO[str] = path.open("w", encoding="utf-8", newline="")
        self._csv: Any = None
        if self.fmt == "csv":
            self._csv = csv.DictWriter(self._fh, fieldnames=FIELDS, extrasaction="ignore")
            self._csv.writeheader()
        self._n = 0

    def write(self, record: dict[str, Any]) -> None:
        if self._csv is not None:
            self._csv.writerow({k: "" if v is None else v for k, v in record.items()})
        else:
            self._fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._n += 1
        if self._n % 200 == 0:
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()
