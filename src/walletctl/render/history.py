"""History entries as a Rich table, JSON, NDJSON or CSV (every field but the table's few);
the result of ``history verify``; ``history anchor``'s line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from walletctl.history.store import ENTRY_FIELDS, Entry
from walletctl.render.console import escape, out, print_error, print_note
from walletctl.render.fit import print_markup, print_table
from walletctl.render.formats import View, records, show
from walletctl.render.output import flat, minute

if TYPE_CHECKING:
    from walletctl.ops.bundle_reader import Reading
    from walletctl.ops.desk import Rulebook, SetUp
    from walletctl.ops.evidence import Anchor, Verified
    from walletctl.ops.money.earlier import Reconciled

OUTCOME_STYLES = {"approved": "green", "created": "cyan", "declined": "red",
                  "refused": "magenta", "unknown": "bold yellow", "error": "red"}

def outcome_markup(outcome: str, shown: str | None = None) -> str:
    """``shown`` (default: the outcome itself) in the outcome's colour."""
    style = OUTCOME_STYLES.get(outcome, "")
    shown = outcome if shown is None else shown
    return f"[{style}]{shown}[/]" if style else shown


TABLE_ROWS = 50  # entries a table shows without --last


def render_listing(fmt: str, entries: Callable[[int | None], Iterable[Entry]],
                   count: Callable[[], int] | None, *, path: str, last: int | None) -> None:
    """``history``: the entries the filters select (``entries(limit)``; ``count()``: how
    many, None when unfiltered: a count of the whole history would cost what the history
    grows to); a table without --last shows a screenful, the other formats get them all."""
    def table() -> None:
        if last is not None:
            _table(list(entries(None)), path)
            return
        shown = list(entries(TABLE_ROWS + 1))  # one more than a screenful: are there more?
        _table(shown[-TABLE_ROWS:], path)
        if len(shown) > TABLE_ROWS:
            of = f" of {count()}" if count is not None else ""
            print_note(f"showing the last {TABLE_ROWS}{of} entries (the newest is "
                       f"#{shown[-1].id}): --last N, filters, or -o csv for all")

    show(_entries_view(lambda: entries(None), table), fmt)


def render_location(path: str) -> None:
    """``history --path``: where the history is."""
    sys.stdout.write(path + "\n")


def render_entries(entries: Iterable[Entry], fmt: str, *, path: str) -> None:
    """The entries in ``fmt``: the data formats streamed as the store reads them; a table
    holds the ones it shows."""
    show(_entries_view(lambda: entries, lambda: _table(list(entries), path)), fmt)


def _entries_view(entries: Callable[[], Iterable[Entry]], table: Callable[[], None]) -> View:
    """Entries as records (``entries()`` read only when a data format writes them)."""
    def rows() -> Iterator[dict[str, Any]]:
        for e in entries():
            yield e.to_dict()

    return View(rows=rows(), columns=ENTRY_FIELDS, table=table)


def _table(entries: Sequence[Entry], path: str) -> None:
    console = out()
    if not entries:
        console.print(f"No entries in {escape(path)} match.")
        return
    headers = ["#", "Time (UTC)", "Op", "Reference / reason", "Amount", "Outcome", "Operator"]
    rows: list[list[str]] = []
    for e in entries:
        # The reference the action used, and the operator's reason on a second, dim line.
        ref = escape(e.new_ref or e.original_ref or "")
        if e.operation == "policy" and e.note:  # the change itself: key: old -> new
            ref = escape(e.note.removeprefix("policy "))
        if e.reason:
            ref += f"\n[dim]{escape(e.reason)}[/]"
        amount = f"{e.amount} {e.currency}" if e.amount is not None else ""
        outcome = e.outcome + (f" ({e.exit_code})" if e.exit_code else "")
        rows.append([str(e.id), minute(e.time), e.operation, ref, amount,
                     outcome_markup(e.outcome, outcome), escape(_who(e))])
    print_table(None, headers, rows, justify={0: "right", 4: "right"}, no_wrap=(0, 4, 5),
                drop=(1, 6, 2, 5))
    unknown = sum(1 for e in entries if e.outcome == "unknown")
    console.print(
        f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
        + (f", {unknown} unknown (resolve: walletctl history --unknown --reconcile)"
           if unknown else "")
    )


def _who(e: Entry) -> str:
    """The operator; and who recorded the outcome, when someone else did (a reconcile)."""
    who = e.operator or e.os_user
    if e.completed_by and e.completed_by != e.operator:
        who += f" (outcome: {e.completed_by})"
    return who


def render_anchor(anchor: Anchor) -> None:
    """``history anchor``: one JSON line, whatever the format (it is the record to keep)."""
    sys.stdout.write(json.dumps(anchor.to_dict(), ensure_ascii=False) + "\n")


def _verified_record(found: Verified) -> dict[str, Any]:
    """``history verify -o json``: the verdict, the head, and every problem found."""
    head = found.head
    return {"history": found.history, "backend": found.backend,
            "file": None if found.backend == "postgresql" else found.history,
            "intact": found.intact, "events": found.events,
            "brokenAt": None if found.broken is None else found.broken.seq,
            "headEvent": head.event if head else None, "headHash": head.hash if head else None,
            "anchors": found.anchors,
            "sinceEvent": None if found.since is None else found.since.event,
            "anchorFailures": [{"line": f.anchor.line, "event": f.anchor.event,
                                "hash": f.anchor.hash, "found": f.found,
                                **({"why": f.why} if f.why else {})}
                               for f in found.failures],
            "spentWithoutDecision": None if found.spent_undecided is None
            else list(found.spent_undecided),
            "problems": _problems(found)}


def _problems(found: Verified) -> list[str]:
    """One line per problem, the first broken link first."""
    where = f"history {found.history}"
    ends = found.head.event if found.head else 0
    lines: list[str] = []
    if found.broken is not None:
        after = "" if found.since is None else f" after anchored event {found.since.event}"
        lines.append(f"{where} is broken at event {found.broken.seq}: {found.broken.problem} "
                     f"({found.events} events before it{after} are intact)")
    if found.failures:
        first = found.failures[0]
        a = first.anchor
        kept = f"anchor line {a.line} ({a.time})"
        if first.why is not None:
            text = f"{where}: {kept}: {first.why}"
        elif first.found is not None:
            text = (f"{where}: event {a.event} no longer has the hash of {kept}: the chain "
                    f"was rewritten at or before event {a.event}")
        elif a.event > ends:
            text = (f"{where}: event {a.event} of {kept} is gone: newer entries were deleted "
                    f"(the chain now ends at event {ends})")
        else:
            text = f"{where}: event {a.event} of {kept} is gone (deleted)"
        more = len(found.failures) - 1
        lines.append(text + (f"; {more} more of {found.anchors} anchor lines fail" if more
                             else ""))
    if found.head_gone:
        lines.append(f"{where}: the event with head hash {found.expect_head} is gone: newer "
                     f"entries were deleted (the chain now ends at event {ends})")
    if found.spent_undecided:
        ids = found.spent_undecided
        others = f" (and {len(ids) - 1} more: -o json lists them)" if len(ids) > 1 else ""
        lines.append(f"{where}: approval #{ids[0]} was spent, but no decision approving it is "
                     f"in the chain{others}")
    return lines


def render_verified(fmt: str, found: Verified) -> None:
    """``history verify``'s result: the record in the data formats; as text, the verdict and
    the head hash to keep, when the history passes; a problem is an error on stderr (the
    first one; -o json lists them all)."""
    record = _verified_record(found)
    show(records([record], document=record,
                 table=lambda: _verdict(record) if found.intact else None), fmt)
    if not found.intact:
        found_lines = record["problems"]
        more = f" (+{len(found_lines) - 1} more: -o json lists them)" if len(found_lines) > 1 \
            else ""
        print_error(found_lines[0] + more,
                    "keep it as evidence; it no longer proves what happened")


def _verdict(record: dict[str, Any]) -> None:
    head = record["headHash"]
    tip = f"; head: event {record['headEvent']}, hash {head[:16]}" if head else ""
    count = record["anchors"]
    anchored = f"; {count} anchor line{'s' if count > 1 else ''} matched" if count else ""
    since = record["sinceEvent"]
    walked = (f"{record['events']} events after anchored event {since}" if since else
              f"{record['events']} events")
    print_markup(f"history {escape(record['history'])}: intact, {walked}, "
                 f"hash chain verified{tip}{anchored}")
    if head:
        print_markup("[dim]keep the head hash elsewhere (a ticket, a log): "
                     f"`walletctl history verify --expect-head {head[:16]}` later "
                     "proves no newer entry was deleted[/]")


def render_setup(fmt: str, done: SetUp) -> None:
    """``history setup``: the schema version and the roles granted."""
    record = {"history": done.history, "backend": done.backend, "schemaBefore": done.before,
              "schemaVersion": done.after, "applied": list(done.applied),
              "granted": list(done.granted), "owner": done.owner}
    show(records([record], document=record, table=lambda: _setup_lines(done)), fmt)


def _setup_lines(done: SetUp) -> None:
    what = ("created" if done.before == 0 else
            f"upgraded from {done.before}" if done.applied else "already current")
    print_markup(escape(f"history {done.history}: schema version {done.after} ({what})"))
    may = {"operator": "move money and file approval requests",
           "approver": "decide other people's approval requests",
           "auditor": "read the history, its approvals and policy (no writes)"}[done.kind]
    for role in done.granted:
        print_markup(escape(f"granted {role} as {done.kind}: {may}"))


def render_rulebook(fmt: str, book: Rulebook) -> None:
    """``history policy``: the desk's rules (and the change just made)."""
    rows = [{"key": r.key, "value": r.value, "setBy": r.set_by, "setAt": r.set_at}
            for r in book.rules]
    document: dict[str, Any] = {"history": book.history, "rules": rows}
    if book.changed is not None:
        key, old, new = book.changed
        document["changed"] = {"key": key, "old": old, "new": new}
    show(records(rows, document=document, table=lambda: _rules_table(book)), fmt)


def _rules_table(book: Rulebook) -> None:
    if book.changed is not None:
        key, old, new = book.changed
        said = "unchanged" if old == new else f"{old or '(unset)'} -> {new or '(unset)'}"
        print_markup(escape(f"{key}: {said}"))
    if not book.rules:
        print_markup(escape(f"history {book.history}: no desk policy set (each profile's own "
                            "[history] rules apply)"))
        return
    print_markup(escape(f"The desk's policy in history {book.history}:"))
    print_table(None, ["Rule", "Value", "Set by", "Set at (UTC)"],
                [[r.key, r.value, r.set_by or "", minute(r.set_at)]
                 for r in book.rules], no_wrap=(0, 1), drop=(3, 2))


def render_reconciled(fmt: str, results: list[Reconciled]) -> None:
    """``history --unknown --reconcile``: one line per entry looked up (a checkout has no
    new reference: its line names the original alone)."""
    rows = [
        {"id": r.entry.id, "operation": r.entry.operation, "originalRef": r.entry.original_ref,
         "newRef": r.entry.new_ref, "outcome": r.outcome, "note": r.note}
        for r in results
    ]

    def table() -> None:
        if not rows:
            out().print("No unknown entries to reconcile.")
        for row in rows:
            refs = " → ".join(str(ref) for ref in (row["originalRef"], row["newRef"]) if ref)
            print_markup(escape(f"#{row['id']} {row['operation']} {refs}: {row['outcome']} "
                                f"({row['note']})"))

    show(View(rows=rows, table=table), fmt)


def render_evidence_check(found: Reading, fmt: str) -> None:
    """``history check-evidence``: the order as the proofs tell it, then what they do not
    cover (the gateway's records as fetched), set apart."""
    document = found.to_dict()
    show(View(rows=[document], document=document, flat=[flat(document)],
              table=lambda: _evidence_lines(found)), fmt)


def _evidence_lines(found: Reading) -> None:
    r = found.reading()
    lines = [f"Evidence {found.path}: {r['events']} event(s) of order {r['reference']} "
             f"(merchant {r['merchant']}), each proven to be in the history's tree of "
             f"{found.size} events, root {found.root[:16]}...",
             f"  anchored: {found.anchored}" if found.anchored else
             "  not anchored: nothing outside the bundle vouches for its checkpoint (give "
             "--anchor ANCHORS or --trust-key PUB.pem)"]
    b = r["balance"]
    lines.append(f"  balance from the history's approved movements ({b['currency'] or '-'}): "
                 f"checked out {b['checkedOut']}, captured {b['captured']}, refunded "
                 f"{b['refunded']}{', reversed' if b['reversed'] else ''}")
    for e in r["entries"]:
        money = f" {e['amount']} {e['currency']}" if e["amount"] else ""
        lines.append(f"  #{e['entry']} {e['time']} {e['step']}{money} {e['reference']}: "
                     f"{e['outcome']}, by {e['by']}"
                     + (f" (approval #{e['approval']})" if e["approval"] else "")
                     + (f", reason {e['reason']!r}" if e["reason"] else ""))
    for a in r["approvals"]:
        spent = "; ".join(f"spent by #{s['entry']} ({s['by']}, {s['outcome']})"
                          for s in a["spentBy"]) or "not spent in this bundle"
        asked = "".join(f"requested by #{r['entry']} ({r['by']}); "
                        for r in a["requestedBy"])
        lines.append(f"  approval #{a['approval']}: {asked}{a['decision']} by "
                     f"{a['decidedBy']} at {a['at']} ({a['note']}); {spent}")
    for f in r["findings"]:
        lines.append(f"  finding #{f['finding']} on {f['reference']}: {f['note']} (recorded "
                     f"by {f['recordedBy']} at {f['at']})")
        lines += [f"    resolved by {x['by']} at {x['at']}: {x['resolution']!r}"
                  for x in f["resolutions"]]
    for x in found.not_covered:
        g = x["gateway"]
        lines.append(f"  not covered by the proofs: the gateway's record "
                     f"{g.get('clientSystemTransactionId')} {g.get('type')} "
                     f"{g.get('transactionAmount')} {g.get('currencyCode')} "
                     f"{g.get('state')}, as fetched at {x['fetchedAt']}")
    for line in lines:
        out().print(escape(line), soft_wrap=True, highlight=False)
