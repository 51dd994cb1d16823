"""Approval requests (four eyes): a filed request, the list, one request in full."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from walletctl.history.approvals import Approval
from walletctl.render.console import escape
from walletctl.render.fit import print_markup, print_table
from walletctl.render.formats import View, shape, show
from walletctl.render.output import first_rows, minute

STATE_STYLES = {"pending": "bold yellow", "approved": "green", "refused": "red",
                "spent": "dim", "expired": "magenta"}
# the columns of -o csv (every field of -o json but the batch's row list)
CSV_COLUMNS: tuple[str, ...] = (
    "id", "state", "kind", "operation", "original_ref", "new_ref", "amount", "currency",
    "reason", "batch_file", "batch_sha256", "batch_rows", "batch_totals", "requester",
    "requester_host", "created_at", "expires_at", "approver", "decided_by", "decided_at",
    "decision_reason", "spent_at", "spent_entry", "spent_batch", "merchant_id", "store_id",
    "profile", "base_url", "request_hash")


def render_filed(fmt: str, found: Approval) -> None:
    """A money command filed ``found`` instead of sending (its error follows on stderr)."""
    now = found.created_at  # just filed: pending

    def table() -> None:
        print_markup(escape(f"approval #{found.id} filed: {found.what()}, by "
                            f"{found.requester}; expires {_when(found.expires_at)}"))

    _show(fmt, found, now, table,
          {"status": "awaiting_approval", "approval": found.to_dict(now)},
          status="awaiting_approval")


def _flat(found: Approval, now: str) -> dict[str, Any]:
    row = found.to_dict(now)
    row.pop("batch_detail", None)
    return row


def _show(fmt: str, found: Approval, now: str, table: Callable[[], None],
          document: Any = None, **first: str) -> None:
    """One request (CSV and NDJSON without the batch's rows; ``table``: its human form)."""
    show(View(rows=[{**first, **_flat(found, now)}], document=document or found.to_dict(now),
              columns=(*first, *CSV_COLUMNS), table=table), fmt)


def _when(stamp: str | None) -> str:
    return minute(stamp) + (" UTC" if stamp else "")


TABLE_ROWS = 200  # requests a table shows (every one is in the data formats)


def render_approvals(fmt: str, found: Iterable[Approval], now: str, *, where: str) -> None:
    """``approvals``: the data formats written as the history is read (-o json with each
    batch request's detail; NDJSON and CSV without); a table shows the first
    :data:`TABLE_ROWS` and counts the rest."""
    def table() -> None:
        shown, count = first_rows(found, TABLE_ROWS)
        _table(shown, now, where, count - len(shown))

    def each(form: Callable[[Approval, str], dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for a in found:
            yield form(a, now)

    show(View(rows=each(Approval.to_dict), lines=each(_flat), columns=CSV_COLUMNS,
              table=table), fmt)


def _table(found: Sequence[Approval], now: str, where: str, more: int) -> None:
    if not found:
        print_markup(f"No approval requests in {escape(where)} match.")
        return
    headers = ["#", "State", "Request", "Requester", "Decided by", "Expires (UTC)"]
    rows: list[list[str]] = []
    for a in found:
        state = a.status(now)
        style = STATE_STYLES.get(state, "")
        rows.append([str(a.id), f"[{style}]{state}[/]", escape(a.what()), escape(a.requester),
                     escape(a.decided_by or ""), _when(a.expires_at).removesuffix(" UTC")])
    print_table(None, headers, rows, justify={0: "right"}, no_wrap=(0, 1), drop=(5, 4))
    pending = sum(1 for a in found if a.status(now) == "pending")
    plural = "s" if len(found) != 1 else ""
    print_markup(f"{len(found)} request{plural}" + (
        f", {pending} pending (another operator: walletctl approve ID)" if pending else ""))
    if more:
        print_markup(f"... {more} more: --state, --since, or -o csv for all of them")


def render_request(fmt: str, found: Approval, now: str) -> None:
    """One request in full: what ``approve`` shows before asking (stdout)."""
    _show(fmt, found, now, lambda: _request(found, now))


def _request(found: Approval, now: str) -> None:
    for label, value in _request_lines(found, now):
        print_markup(f"{label + ':':<16}{escape(value)}", indent=" " * 16)
    if found.kind == "batch" and found.batch_detail:
        _batch_rows(json.loads(found.batch_detail))


def _request_lines(found: Approval, now: str) -> list[tuple[str, str]]:
    """(label, value) of each line of a request in full."""
    lines = [("approval", f"#{found.id} ({found.status(now)})"),
             ("operation", found.operation),
             ("merchant", f"{found.merchant_id} store {found.store_id}")]
    if found.kind == "single":
        lines += [("original", found.original_ref or ""), ("new reference", found.new_ref or ""),
                  ("amount", f"{found.amount} {found.currency}")]
    else:
        lines += [("batch file", found.batch_file or ""),
                  ("file sha256", found.batch_sha256 or ""),
                  ("bound rows", f"{found.batch_rows} above the approval amount"),
                  ("bound totals", found.batch_totals or "")]
    lines += [("reason", found.reason or "(none)"),
              ("requested by", f"{found.requester} at {_when(found.created_at)}"
                               + (f" on {found.requester_host}" if found.requester_host else "")),
              ("expires", _when(found.expires_at)),
              ("request sha256", found.request_hash)]
    if found.decided_by:
        lines.append(("decided by", f"{found.decided_by} at {_when(found.decided_at)}"
                      + (f": {found.decision_reason}" if found.decision_reason else "")))
    if found.spent_at:
        lines.append(("spent", _when(found.spent_at) + (
            f" by entry #{found.spent_entry}" if found.spent_entry else
            f" by batch {found.spent_batch}")))
    return lines


def _batch_rows(detail: dict[str, Any]) -> None:
    rows = detail.get("rows", [])
    above = int(detail.get("above", len(rows)))
    print_markup(f"rows above the approval amount: {above}")
    if rows:
        print_table(None, ["Line", "Reference", "Amount"],
                    [[str(r["line"]), escape(str(r["ref"])), f"{r['amount']} {r['currency']}"]
                     for r in rows], justify={0: "right", 2: "right"}, no_wrap=(0, 2))
    if above > len(rows):
        print_markup(f"... and {above - len(rows)} more (the file itself is what is approved)")


def render_decided(fmt: str, found: Approval) -> None:
    """``approve`` / ``approvals refuse``: what was decided."""
    _show(fmt, found, found.decided_at or "", lambda: _decided(found))


def _decided(found: Approval) -> None:
    if found.state == "approved":
        print_markup(escape(f"approved #{found.id}: {found.requester}'s {found.what()}; "
                            f"they send it with --approval {found.id} before "
                            f"{_when(found.expires_at)}"))
    else:
        print_markup(escape(f"refused #{found.id}: {found.requester}'s {found.what()}"))


def render_watched(fmt: str, found: Iterable[Approval], *, where: str) -> None:
    """``approvals --watch``: one line per request as it is filed (a table's line names
    its id; the data formats write one JSON object a line), each flushed at once."""
    import sys

    from walletctl.render.console import escape_controls, print_stderr

    print_stderr(f"watching {escape_controls(where)} for new approval requests (Ctrl-C "
                 "to stop)")
    for a in found:
        now = a.created_at
        if shape(fmt) == "table":
            line = (f"#{a.id} {a.status(now)}: {a.what()}, by {a.requester}; expires "
                    f"{_when(a.expires_at)}")
            sys.stdout.write(escape_controls(line) + "\n")
        else:
            sys.stdout.write(json.dumps(a.to_dict(now)) + "\n")
        sys.stdout.flush()
