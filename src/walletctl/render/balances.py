"""Balance reports (``lookup --batch``): rows written as they arrive, the totals and the
run's summary at the end (CSV: the totals on stderr; a table: the first rows). Memory stays
flat: nothing but the first table rows is kept."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from walletctl.models.money import exponent, format_major
from walletctl.ops.batch.balance_report import AMOUNTS, COLUMNS, BalanceRow, Report
from walletctl.render.console import err, escape, out, print_note, print_stopped
from walletctl.render.fit import print_table
from walletctl.render.formats import RowSink, shape, sink

TABLE_ROWS = 200


def totals_dict(report: Report) -> dict[str, dict[str, Any]]:
    return {cur: {"references": report.counts.get(cur, 0),
                  **{k: f"{v:f}" for k, v in sums.items()}}
            for cur, sums in sorted(report.totals.items())}


class BalanceWriter:
    """The rows as they arrive (a table keeps the first :data:`TABLE_ROWS`), then the totals
    and the summary; on stderr, the references folded and why the run stopped."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.shape = shape(fmt)
        self.title = ""
        self._kept: list[BalanceRow] = []
        self._more = 0
        self._stream: RowSink | None = None

    def start(self, name: str) -> Callable[[BalanceRow], None]:
        """Begin the report on the input ``name``; returns the function a row goes to."""
        self.title = f"Balances of the references in {name}"
        if self.shape != "table":  # a JSON document holds them as "rows"
            self._stream = sink(self.fmt, columns=COLUMNS, key="rows")
        return self.write

    def write(self, row: BalanceRow) -> None:
        if self._stream is not None:
            self._stream.write(row.as_dict())
        elif len(self._kept) < TABLE_ROWS:
            self._kept.append(row)
        else:
            self._more += 1

    def finish(self, report: Report) -> None:
        summary = {"references": report.references, "duplicates_folded": report.duplicates,
                   "shown": report.shown, "errors": report.errors, **run_summary(report)}
        totals = totals_dict(report)
        if self._stream is not None:
            self._stream.close({"totals": totals, "summary": summary})  # none in cells
        if self.shape == "flat":
            for cur, sums in totals.items():
                parts = ", ".join(f"{k} {sums[k]}" for k in AMOUNTS)
                sys.stderr.write(f"walletctl: total {cur} ({sums['references']} refs): "
                                 f"{parts}\n")
            if summary.get("duplicates_folded"):
                sys.stderr.write(f"walletctl: {_folded(summary)}\n")
        elif self.shape == "table":
            self._table(totals, summary)
            sys.stdout.flush()
        for line, ref, first in report.folded:
            print_note(f"line {line}: {ref} repeats line {first}: looked up and counted once")
        if report.duplicates > len(report.folded):
            print_note(f"... {report.duplicates - len(report.folded)} more repeated "
                       "reference(s) folded")
        print_stopped(report.fatal, report.fatal_hint)

    def _table(self, totals: dict[str, dict[str, Any]], summary: dict[str, Any]) -> None:
        console = out()
        # the narrower the terminal, the fewer amounts: the ones a desk reads first stay
        print_table(escape(self.title), ["Reference", "State", "Cur",
                                         *(n.capitalize() for n in _CELLS)],
                    [_row(r) for r in self._kept],
                    justify={i: "right" for i in range(3, 9)},
                    no_wrap=tuple(range(len(_CELLS) + 3)), drop=(10, 6, 5, 9, 8, 1, 7, 2))
        for r in self._kept:
            if r.error is not None:
                console.print(f"line {r.line}: {escape(r.ref)}: {escape(r.error or '')}",
                              soft_wrap=True, highlight=False)
        if self._more:
            console.print(f"... {self._more} more row(s): use -o csv, -o ndjson or -o json "
                          "for all of them")
        if totals:
            _totals_table(totals)
        console.print(f"{summary['references']} reference(s) looked up, {summary['shown']} "
                      f"shown, {summary['errors']} error(s), {summary['requests']} requests "
                      f"in {summary['elapsed_s']} s")
        if summary.get("duplicates_folded"):
            console.print(_folded(summary), highlight=False)


_CELLS = (*AMOUNTS, "first", "last")


def _row(r: BalanceRow) -> list[str]:
    if r.error is not None:
        return [escape(r.ref), "[red]error[/]", "", *[""] * len(_CELLS)]
    places = _places(r.currency)
    cells = {k: f"{v:,.{places}f}" for k, v in r.amounts.items()}
    cells["first"] = r.first.strftime("%Y-%m-%d") if r.first else ""
    cells["last"] = r.last.strftime("%Y-%m-%d") if r.last else ""
    return [escape(r.ref), escape(r.state or ""), r.currency or "", *(cells[n] for n in _CELLS)]


def _totals_table(totals: dict[str, dict[str, Any]]) -> None:
    amounts = ("authorised", "captured", "refunded", "capturable", "refundable")
    rows = [[cur, str(s["references"]),
             *(format_major(Decimal(s[k]), cur).removesuffix(f" {cur}") for k in amounts)]
            for cur, s in totals.items()]
    print_table("Totals per currency", ("Cur", "Refs", *(k.capitalize() for k in amounts)),
                rows, justify={i: "right" for i in range(1, 7)}, no_wrap=tuple(range(7)),
                drop=(4, 6, 5, 1))


def _folded(summary: dict[str, Any]) -> str:
    n = summary["duplicates_folded"]
    return (f"{n} repeated reference{'s' if n != 1 else ''} folded: each reference is "
            "looked up and counted once")


def _places(currency: str | None) -> int:
    try:
        return exponent(currency or "")
    except (KeyError, ValueError):
        return 2


def run_summary(report: Report) -> dict[str, Any]:
    """How the lookups went: requests, time, rate, and what stopped them (if anything)."""
    return {"requests": report.requests, "elapsed_s": round(report.elapsed, 3),
            "refs_per_s": round(report.references / report.elapsed, 1) if report.elapsed
            else 0.0, "circuit_breaker_open": report.breaker_open, "stopped_by": report.fatal,
            "interrupted": report.interrupted}


@contextmanager
def lookup_progress(what: str = "references", *,
                    fmt: str | None = None) -> Iterator[Callable[[], None]]:
    """A spinner with a count of the ``what`` looked up on stderr when it is a terminal
    (nothing otherwise: CI logs stay quiet); yields the function to call once per lookup.
    It stays on the screen above output in a data format ``fmt``."""
    transient = fmt is None or shape(fmt) == "table"
    if not err().is_terminal:
        yield lambda: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn(f"{{task.completed}} {what} looked up"),
                        TimeElapsedColumn(), console=err(), transient=transient)
    task = progress.add_task("lookup", total=None)
    with progress:
        yield lambda: progress.advance(task)

