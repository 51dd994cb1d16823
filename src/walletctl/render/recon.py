"""``walletctl recon``'s report: a table per kind of finding, the totals and a line of
counts; one JSON document; NDJSON or CSV a row per finding, then the rest (NDJSON: one
object; CSV: a ``total`` row per currency and operation)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from walletctl.constants import ExitCode
from walletctl.history.findings import Recorded
from walletctl.models.money import quantize
from walletctl.ops.recon.compare import LABELS, UNCONFIRMED, Finding, ReconResult, Side, money_text
from walletctl.ops.recon.on_file import FindingList
from walletctl.render.balances import run_summary
from walletctl.render.console import escape, out, print_error, print_stopped
from walletctl.render.fit import fit_phrases
from walletctl.render.fit import print_table as fitted
from walletctl.render.formats import View, show

CSV_COLUMNS = ("kind", "original", "reference", "operation", "source", "entry", "operator",
               "history_outcome", "history_amount", "gateway_state", "gateway_amount",
               "currency", "gateway_time", "history_count", "gateway_count", "note",
               "finding", "finding_state", "resolution", "outside_window")


def amount_text(amount: Decimal, currency: str) -> str:
    """``15.00`` at the currency's places (as given for an unknown currency)."""
    try:
        return f"{quantize(amount, currency):f}"
    except (KeyError, ValueError):
        return f"{amount:f}"


def totals_dict(result: ReconResult) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cur, op, hist, gw in result.totals.rows():
        out.setdefault(cur, {})[op] = {
            "history": {"count": hist.count, "amount": amount_text(hist.amount, cur)},
            "gateway": {"count": gw.count, "amount": amount_text(gw.amount, cur)},
            "difference": amount_text(gw.amount - hist.amount, cur)}
    return out


def finding_dict(f: Finding) -> dict[str, Any]:
    """A finding as recon reports it: with whether it is dated outside the window."""
    return {**f.as_dict(), "outsideWindow": f.outside_window}


def recon_document(result: ReconResult) -> dict[str, Any]:
    """The JSON form (documented in docs/history.md, "Reconciliation")."""
    def listed(*kinds: str) -> list[dict[str, Any]]:
        return [finding_dict(f) for f in result.findings if f.kind in kinds and not f.resolved]

    head = {"profile": result.profile, "merchantId": result.merchant_id,
            "storeId": result.store_id, "history": result.history, "backend": result.backend,
            "journals": result.journals, "since": result.since, "until": result.until,
            "operations": result.operations, "openSince": result.open_since}
    return {"recon": head, "agrees": result.exit_code == 0,
            "exitCode": result.exit_code, "unrecorded": listed("unrecorded"),
            "unconfirmed": listed(*UNCONFIRMED), "unknown": listed("unknown"),
            "unchecked": listed("unchecked"),
            "resolved": [finding_dict(f) for f in result.resolved], "totals": totals_dict(result),
            "counts": {**result.counts.as_dict(), **result.kind_counts()},
            "summary": run_summary(result.report)}


def _csv_row(f: Finding) -> dict[str, Any]:
    g = f.gateway
    return {"kind": f.kind, "original": f.original, "reference": f.reference,
            "operation": f.operation, "source": f.source, "entry": f.entry,
            "operator": f.who, "history_outcome": f.outcome, "history_amount": f.amount,
            "gateway_state": g.state if g else None,
            "gateway_amount": f"{g.amount:f}" if g else None,
            "currency": (g.currency if g else None) or f.currency,
            "gateway_time": g.time if g else None, "note": f.note,
            "finding": f.recorded.id if f.recorded else None,
            "finding_state": f.recorded.state if f.recorded else None,
            "resolution": f.recorded.resolution if f.recorded else None,
            "outside_window": f.outside_window}


def render_recon(result: ReconResult, fmt: str) -> None:
    """The report in ``fmt``; on stderr, when the exit is not 0, the mismatches named or why
    lookups were not answered."""
    _report(result, fmt)
    code = result.exit_code
    if code == ExitCode.MISMATCH:
        print_error(mismatch_message(result))
    print_stopped(result.report.fatal, result.report.fatal_hint)
    unchecked = result.of("unchecked")
    if unchecked and code != ExitCode.INTERRUPTED:
        names = ", ".join(f.original for f in unchecked[:5])
        more = f" and {len(unchecked) - 5} more" if len(unchecked) > 5 else ""
        print_error(f"recon: {len(unchecked)} order(s) could not be looked up ({names}{more}):"
                    " the comparison is incomplete; run it again later")


_LISTS = ("unrecorded", "unconfirmed", "unknown", "unchecked", "resolved")


def _report(result: ReconResult, fmt: str) -> None:
    """One JSON document; a line per finding, then the document without its lists; a CSV
    row per finding, then a ``total`` row per currency and operation; or the tables."""
    doc = recon_document(result)

    def flat() -> Iterator[dict[str, Any]]:
        yield from (_csv_row(f) for f in result.findings)
        for cur, op, hist, gw in result.totals.rows():
            yield {"kind": "total", "operation": op, "currency": cur,
                   "history_amount": amount_text(hist.amount, cur),
                   "gateway_amount": amount_text(gw.amount, cur),
                   "history_count": hist.count, "gateway_count": gw.count}

    show(View(rows=[finding_dict(f) for f in result.findings], columns=CSV_COLUMNS,
              document=doc, flat=flat(),
              summary=lambda: {k: v for k, v in doc.items() if k not in _LISTS},
              table=lambda: _tables(result)), fmt)


# ------------------------------------------------------------------------------- table


def _desk(f: Finding, with_outcome: bool = True) -> str:
    what = f"{f.operation} {f.outcome}" if with_outcome else str(f.operation)
    return f"{what} {money_text(f.amount, f.currency)}".strip()


def _gateway(f: Finding) -> str:
    g = f.gateway
    return "nothing" if g is None else f"{g.state} {money_text(g.amount, g.currency)}"


def _entry(f: Finding) -> str:
    """``#12`` (the history's entry), or ``refunds.journal:3`` (a journal's line)."""
    if f.entry is not None:
        return f"#{f.entry}"
    return (f.source or "").removeprefix("journal ").replace(" line ", ":")


def _short_time(text: str | None) -> str:
    """``2026-11-22T23:44`` (one word: a column shows it whole or not at all)."""
    return (text or "")[:16]


def _tables(result: ReconResult) -> None:
    console = out()

    def print_table(*args: Any, **kwargs: Any) -> None:
        if fitted(*args, **kwargs):  # the note on hidden columns: a blank line after it too
            console.print()
    window = (f"from {_short_time(result.since)}Z" if result.since else "from the start") \
        + f" to {_short_time(result.until)}Z"
    console.print(fit_phrases([escape(f"Recon of profile {result.profile}"),
                               escape(f"(merchant {result.merchant_id}, store "
                                      f"{result.store_id}),"), escape(window + ";"),
                               escape(f"history {result.history}")]),
                  soft_wrap=True, highlight=False)
    for journal in result.journals:
        console.print(escape(f"  journal {journal}"), soft_wrap=True, highlight=False)
    console.print()
    for found, title, headers, cells, options in _finding_tables(result):
        if found:
            print_table(title, headers, cells, **options)
    rows = result.totals.rows()
    if rows:
        def side(s: Side, cur: str) -> list[str]:
            return [str(s.count), amount_text(s.amount, cur)]

        print_table("Totals per currency: follow-ups in the window",
                    ["Cur", "Op", "#", "History", "#", "Gateway", "Difference"],
                    [[cur, op, *side(h, cur), *side(g, cur), amount_text(g.amount - h.amount, cur)]
                     for cur, op, h, g in rows],
                    justify={i: "right" for i in (2, 3, 4, 5, 6)}, no_wrap=(3, 5, 6))
    console.print(fit_phrases([escape(p) for p in _counts(result)]), soft_wrap=True,
                  highlight=False)
    filed = [f"#{r.id}" for f in result.mismatches if (r := f.recorded) is not None]
    if filed:
        console.print(fit_phrases([f"On file as finding(s) {', '.join(filed)}:",
                                   "`walletctl recon resolve ID --note TEXT` closes one."]),
                      soft_wrap=True, highlight=False)
    if result.exit_code == 0:
        console.print("The history and the gateway agree.")


def _finding_tables(result: ReconResult) -> list[tuple[list[Any], str, list[str],
                                                       list[list[str]], dict[str, Any]]]:
    """(findings, title, headers, rows, print_table's options) of each kind of finding."""
    unrecorded = [f for f in result.of("unrecorded", resolved=False) if not f.outside_window]
    earlier = [f for f in result.of("unrecorded", resolved=False) if f.outside_window]
    unconfirmed = result.of(*UNCONFIRMED, resolved=False)
    unknown = result.of("unknown", resolved=False)
    resolved = result.resolved
    unchecked = result.of("unchecked")

    def moved(found: list[Finding]) -> list[list[str]]:
        return [[escape(f.original), escape(f.reference), str(f.operation),
                  money_text(g.amount, g.currency), escape(g.state), _short_time(g.time)]
                for f in found if (g := f.gateway) is not None]
    moved_headers = ["Original", "Reference", "Op", "Amount", "State", "Time"]
    moved_options: dict[str, Any] = {"justify": {3: "right"}, "no_wrap": (3, 5),
                                      "drop": (5, 0)}
    return [
        (unrecorded, "Money moved at the gateway with no history entry", moved_headers,
         moved(unrecorded), moved_options),
        (earlier, "Open orders (--open): money moved outside the window with no history "
                  "entry (not in the totals)", moved_headers, moved(earlier), moved_options),
        (unconfirmed, "History entries the gateway does not confirm",
         ["Entry", "Original", "Reference", "Problem", "History", "Gateway", "By"],
         [[escape(_entry(f)), escape(f.original), escape(f.reference), f.kind,
           escape(_desk(f)), escape(_gateway(f)), escape(f.who or "")] for f in unconfirmed],
         {"drop": (6, 1)}),
        (unknown, "Unknown outcomes, still open (walletctl history --unknown --reconcile)",
         ["Entry", "Original", "Reference", "History", "Gateway", "By"],
         [[escape(_entry(f)), escape(f.original), escape(f.reference),
           escape(_desk(f, with_outcome=False)), escape(_gateway(f)), escape(f.who or "")]
          for f in unknown], {"drop": (5, 1)}),
        (resolved, "Resolved before (recon resolve): not reported as new",
         ["Finding", "Reference", "Problem", "Resolved by", "Note"],
         [[f"#{r.id}", escape(f.reference), f.kind, escape(r.resolved_by or ""),
           escape(r.resolution or "")] for f in resolved if (r := f.recorded) is not None],
         {"drop": (3,)}),
        (unchecked, "Not checked: the lookup was not answered", ["Original", "Why"],
         [[escape(f.original), escape(f.note)] for f in unchecked], {}),
    ]


def _counts(result: ReconResult) -> list[str]:
    """The counts line, in phrases (it breaks between them)."""
    c, k, s = result.counts, result.kind_counts(), run_summary(result.report)
    unconfirmed = sum(k[kind] for kind in UNCONFIRMED)
    rows = f" and {c.journal_rows} journal row(s)" if result.journals else ""
    outside = (f"{c.outside_window} gateway record(s) outside the window compared (--open),"
               " none in the totals;") if result.open_since is not None else ""
    return [f"{c.originals} order(s) looked up;",
            *([outside] if outside else []),
            f"{c.entries} history entries{rows} compared, {c.agreed} agree;",
            f"{k['unrecorded']} not in the history,", f"{unconfirmed} not confirmed,",
            f"{k['unknown']} unknown,",
            *([f"{k['unchecked']} not checked,", f"{k['resolved']} resolved before"]
              if k["resolved"] else [f"{k['unchecked']} not checked"]),
            f"({s['requests']} requests in {s['elapsed_s']} s)"]


def mismatch_message(result: ReconResult, shown: int = 5) -> str:
    """One line naming the mismatches (the first ``shown`` of them)."""
    named = [f"{f.reference} {LABELS[f.kind]}" for f in result.mismatches]
    more = f" and {len(named) - shown} more" if len(named) > shown else ""
    return (f"recon: {len(named)} mismatch(es) between the history and the gateway: "
            f"{'; '.join(named[:shown])}{more}")


# ------------------------------------------------------------------- findings on file

FINDING_COLUMNS = ("id", "state", "kind", "original", "reference", "entry", "movement_by",
                   "detail", "recorded_at", "recorded_by", "resolved_at", "resolved_by",
                   "resolution", "resolved_entry")


def render_findings(found: FindingList, fmt: str) -> None:
    """``recon findings``: one row per finding on file."""
    rows = [{c: getattr(r, c) for c in FINDING_COLUMNS} for r in found.findings]

    def table() -> None:
        if not rows:
            which = f"{found.state} " if found.state else ""
            out().print(escape(f"No {which}findings on file in history {found.history}."),
                        soft_wrap=True, highlight=False)
            return
        fitted(f"Findings on file ({found.history})",
               ["#", "State", "Problem", "Reference", "Recorded", "Resolved by", "Note"],
               [[f"#{r.id}", r.state, r.kind, escape(r.reference),
                 escape(f"{_short_time(r.recorded_at)} {r.recorded_by}"),
                 escape(r.resolved_by or ""), escape(r.resolution or r.detail)]
                for r in found.findings], drop=(4, 5))

    show(View(rows=rows, document={"history": found.history, "findings": rows},
              columns=FINDING_COLUMNS, table=table), fmt)


def render_resolved(found: Recorded, fmt: str) -> None:
    """``recon resolve``: the finding as it is now."""
    def table() -> None:
        out().print(escape(f"Finding #{found.id} ({found.kind} {found.reference}) resolved "
                           f"by {found.resolved_by} at {found.resolved_at}: "
                           f"{found.resolution}"), highlight=False)

    record = found.to_dict()
    show(View(rows=[record], document=record, columns=FINDING_COLUMNS, table=table), fmt)
