"""``walletctl order REF``: the order's timeline, approvals, findings, balance and verdict:
one JSON document, NDJSON or CSV a row per step of the timeline, or the timeline's table
(columns are left out, named, before a word is broken) and a line each for the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from walletctl.models.money import format_major
from walletctl.ops.order import OrderView, Step
from walletctl.ops.recon.compare import OPERATIONS, money_text
from walletctl.render.console import escape, out, print_error, print_note
from walletctl.render.fit import fit_path, fit_phrases, print_table, terminal_width
from walletctl.render.formats import View, shape, show
from walletctl.render.output import minute

if TYPE_CHECKING:
    from walletctl.history.approvals import Approval
    from walletctl.models.ledger import Balance
    from walletctl.ops.evidence import Evidence

CSV_COLUMNS = ("time", "step", "reference", "amount", "currency", "entry", "outcome",
               "operator", "reason", "approval", "gatewayState")


def _balance_dict(b: Balance) -> dict[str, Any]:
    from walletctl.render.recon import amount_text

    return {"reference": b.reference, "kind": b.kind, "state": b.state, "currency": b.currency,
            **{name: amount_text(getattr(b, name), b.currency) for name in (
                "authorised", "captured", "refunded", "capturable", "refundable")},
            "reversed": b.reversed}


def order_document(view: OrderView) -> dict[str, Any]:
    from walletctl.render.records import record_dict

    named = view.disagreements
    return {
        "order": {"reference": view.reference, "profile": view.profile,
                  "history": view.history or None, "backend": view.backend,
                  # the follow-up's reference given, and what it is (None: the order's own)
                  "asked": view.asked, "askedIs": view.asked_is},
        "gateway": [record_dict(r) for r in view.records],
        "history": [e.to_dict() for e in view.entries],
        "approvals": [a.to_dict(view.now) for a in view.approvals],
        "findings": [f.as_dict() for f in view.findings],
        "balance": None if view.balance is None else _balance_dict(view.balance),
        "timeline": [s.as_dict() for s in view.timeline()],
        "verdict": {"agrees": not named, "compared": view.backend != "none",
                    "exitCode": view.exit_code, "text": view.verdict,
                    "disagreements": [{"kind": f.kind, "reference": f.reference,
                                       "note": f.note} for f in named]},
    }


def render_order(view: OrderView, fmt: str, evidence: Evidence | None = None) -> None:
    """The view in ``fmt``; ``evidence``: then one stderr line on the bundle written. In a
    data format, the disagreements are named on stderr too (a table ends with its verdict)."""
    rows = [s.as_dict() for s in view.timeline()]
    show(View(rows=rows, document=order_document(view), columns=CSV_COLUMNS,
              table=lambda: _table(view)), fmt)
    if evidence is not None:  # where the bundle went and the head it ends at
        print_note(evidence_note(evidence))
    data = shape(fmt) != "table"  # a table says these itself
    if view.followup_note is not None and data:
        print_note(view.followup_note)
    if view.disagreements and data:
        print_error(f"order: {view.verdict}")


def evidence_note(evidence: Evidence) -> str:
    """Where the bundle went, the checkpoint its proofs lead to, and the check to run: with
    ``--anchor`` when a line of the anchors file is that checkpoint (the check that says
    who vouches for it); without, the check says "not anchored"."""
    import shlex

    proofs = (f"evidence: {evidence.path} ({evidence.events} events, each with its inclusion "
              f"proof to the tree of {evidence.anchor_event} events, root "
              f"{evidence.anchor_hash[:16]}...")
    check = f"walletctl history check-evidence {shlex.quote(str(evidence.path))}"
    if evidence.anchors_file is None:
        return (f"{proofs}, {evidence.anchored}: not anchored, nothing outside the bundle "
                f"vouches for it); check it with `{check}`")
    key = " (or --trust-key PUB.pem: the line is signed)" if evidence.signed else ""
    return (f"{proofs}, the checkpoint on line {evidence.anchor_line} of "
            f"{evidence.anchors_file}); check it with "
            f"`{check} --anchor {shlex.quote(str(evidence.anchors_file))}`{key}")


# ------------------------------------------------------------------------------- table


def _when(stamp: str) -> str:
    """``2026-11-25 23:05:01`` (two words: a narrow column puts the time under the date)."""
    return stamp[:19].replace("T", " ")


def _history(step: Step) -> str:
    e = step.entry
    if e is None:
        return "[bold red]no entry[/]"
    from walletctl.render.history import outcome_markup

    text = f"#{e.id} {outcome_markup(e.outcome)} {escape(e.operator or e.os_user)}"
    why = [f"approval #{e.approval}"] if e.approval is not None else []
    if e.reason:
        why.append(escape(e.reason))
    if why:
        text += f"\n[dim]{': '.join(why)}[/]"
    return text


def _gateway(step: Step) -> str:
    from walletctl.render.records import state_markup

    if step.record is None:
        sent = step.entry is not None and step.entry.outcome != "refused" \
            and step.step in OPERATIONS  # a money step (not approval, finding, ...)
        return "nothing" if sent else "[dim]-[/]"
    return state_markup(step.record.state)


def _approval_phrases(a: Approval, now: str) -> list[str]:
    phrases = [f"Approval #{a.id}", f"({a.status(now)}):", *escape(a.what()).split()]
    phrases += ["requested", "by", f"{escape(a.requester)},", minute(a.created_at) + ";"]
    if a.decided_by:
        verb = "refused" if a.state == "refused" else "approved"
        phrases += [verb, "by", escape(a.decided_by) + ",", minute(a.decided_at) + ";"]
    if a.spent_entry is not None:
        phrases += ["spent", "by", f"entry #{a.spent_entry}"]
    elif a.spent_batch:
        phrases += ["spent", "by", "batch", escape(a.spent_batch)]
    phrases[-1] = phrases[-1].rstrip(";,")
    return phrases


def _table(view: OrderView) -> None:
    console = out()
    # a path wider than the terminal is shown with its middle elided on a line of its own
    # (indented), never cut at the edge or broken inside a word; -o json has it whole
    where = ["no history"] if view.backend == "none" else [
        "history", escape(fit_path(view.history, terminal_width() - 2)), f"({view.backend})"]
    console.print(fit_phrases([f"Order {escape(view.reference)};",
                               f"profile {escape(view.profile)};", *where]),
                  soft_wrap=True, crop=False, highlight=False)
    if view.followup_note is not None:
        console.print(fit_phrases(escape(view.followup_note).split()), soft_wrap=True,
                      highlight=False)
    _timeline(view.timeline())
    lines = [_approval_phrases(a, view.now) for a in view.approvals] + _findings(view)
    if view.balance is not None:
        lines.append(_balance_phrases(view.balance))
    elif view.balance_note:
        lines.append(["No balance:", *escape(view.balance_note).split()])
    for phrases in lines:
        console.print(fit_phrases(phrases), soft_wrap=True, highlight=False)
    console.print(fit_phrases(escape(view.verdict).split()), soft_wrap=True, highlight=False,
                  style="green" if view.exit_code == 0 else "bold red")


def _findings(view: OrderView) -> list[list[str]]:
    lines = []
    for f in view.disagreements:
        filed = [f"(finding #{f.recorded.id})"] if f.recorded is not None else []
        lines.append(["[red]x[/]", *escape(f.note).split(), *filed])
    for f in view.resolved:
        r = f.recorded
        assert r is not None
        lines.append([
            "[green]resolved[/]", f"finding #{r.id}:", *escape(f.note).split(), "-",
            "resolved", "by", f"{escape(r.resolved_by or '')},",
            f"{minute(r.resolved_at)}:",
            *escape(r.resolution or "").split()])
    return lines


def _timeline(steps: list[Step]) -> None:
    if not steps:
        return
    days = {s.time[:10] for s in steps}
    one_day = len(days) == 1  # the date once, in the title, and times in the column
    rows = [[s.time[11:19] if one_day else _when(s.time),
             escape(f"{s.step} {s.reference}"), money_text(s.amount, s.currency),
             _history(s), _gateway(s)] for s in steps]
    title = f"Timeline of {days.pop()} (UTC)" if one_day else "Timeline (UTC)"
    print_table(title, ["Time", "Step", "Amount", "History", "Gateway"], rows,
                justify={2: "right"}, no_wrap=(2,), drop=(0, 4, 2))


def _balance_phrases(b: Balance) -> list[str]:
    def amount(name: str) -> str:
        return f"{name} {format_major(getattr(b, name), b.currency)},"

    phrases = ["Balance:", amount("authorised"), amount("captured"), amount("refunded"),
               *(["reversed,"] if b.reversed else []), amount("capturable"),
               amount("refundable")]
    phrases[-1] = phrases[-1].rstrip(",")
    return phrases

