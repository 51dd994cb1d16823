"""Per-row results, streamed to a file as rows finish: CSV for a ``.csv`` path, else NDJSON."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path
from typing import IO, Any

FIELDS = (
    "line", "op", "ref", "new_ref", "amount", "currency", "status", "transaction_id", "state",
    "attempts", "earlier_run", "detail",
)


class ResultsWriter:
    """Streams rows to ``path``. A write that fails mid-run (a full disk, a file system gone)
    never stops the run, whose money is already moving: the writer stops writing,
    :attr:`failed` says why and after how many rows, and the journal still has every row."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = path.open("w", encoding="utf-8", newline="")
        self._csv: Any = None
        self._n = 0
        self.failed: str | None = None
        if path.suffix.lower() == ".csv":
            self._csv = csv.DictWriter(self._fh, fieldnames=FIELDS, extrasaction="ignore")
            self._guarded(self._csv.writeheader)

    def _guarded(self, action: Any, *args: Any) -> None:
        if self._fh is None:
            return
        try:
            action(*args)
        except OSError as exc:
            self.failed = (f"{exc.strerror or type(exc).__name__} after {self._n} row(s)")
            fh, self._fh = self._fh, None
            with contextlib.suppress(OSError):
                fh.close()

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        if self._csv is not None:
            self._guarded(self._csv.writerow,
                          {k: "" if v is None else v for k, v in record.items()})
        else:
            self._guarded(self._fh.write, json.dumps(record, separators=(",", ":")) + "\n")
        if self._fh is None:
            return
        self._n += 1
        if self._n % 200 == 0:
            self._guarded(self._fh.flush)

    def close(self) -> None:
        if self._fh is not None:
            self._guarded(self._fh.flush)
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError as exc:
                self.failed = f"{exc.strerror or type(exc).__name__} after {self._n} row(s)"
