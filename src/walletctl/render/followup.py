"""The result of one capture, refund or reversal: a sentence on a terminal (``Captured 15.00
EUR of REF as REF-CAP1: Approved (CapturedByProvider)`` + what remains), one row in the data
formats; and the same for an earlier run's operation found already applied."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from walletctl.models.money import format_major
from walletctl.models.operations import PAST_OF
from walletctl.render.console import escape, out, print_note, print_warning
from walletctl.render.fit import fit_phrases, print_markup
from walletctl.render.formats import View, show

if TYPE_CHECKING:
    from decimal import Decimal

    from walletctl.models.followup import FollowUpResponse, Operation
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.redirect import FollowUpPlan

VERB = PAST_OF


render_waiting = print_note  # waiting behind another walletctl on the same original (stderr)
render_warning = print_warning  # an outcome the history could not record (stderr)


def _row(op: Operation, ref: str, new: str, amount: Decimal, currency: str, state: str,
         **more: object) -> dict[str, object]:
    return {"operation": op, "clientSystemInvoiceId": ref, "clientSystemTransactionId": new,
            "amount": format(amount, "f"), "currencyCode": currency, "state": state, **more}


def render_applied(fmt: str, op: Operation, ref: str, entry: int | None,
                   record: TransactionRecord, *, tag: str = "") -> None:
    """The movement was already there: an earlier run's unknown outcome turned out applied
    (``entry``: its history entry; nothing was sent this time), or the gateway answered 409
    and a lookup showed this very movement (``entry`` None)."""
    new = record.client_system_transaction_id
    money = format_major(record.transaction_amount, record.currency_code)
    row = _row(op, ref, new, record.transaction_amount, record.currency_code, record.state,
               alreadyApplied=True, historyEntry=entry)

    def table() -> None:
        print_markup(
            f"{tag}{VERB[op]} {money} of {escape(ref)} as {escape(new)}: {escape(record.state)} "
            "— already applied " + (
                f"by an earlier run whose outcome was unknown (history #{entry}); nothing "
                "was sent" if entry is not None else "(the gateway answered 409: its "
                "reference is used, by this very movement); nothing new was applied"))

    show(View(rows=[row], document=row, table=table), fmt)


def render_result(fmt: str, op: Operation, ref: str, plan: FollowUpPlan,
                  response: FollowUpResponse, *, tag: str = "") -> None:
    """The gateway's answer to the follow-up ``plan`` sent."""
    req = plan.request
    money = format_major(req.amount, req.currency_code)
    row = _row(op, ref, req.client_system_transaction_id, req.amount, req.currency_code,
               response.state, providerStateCode=response.provider_state_code, id=response.id)

    def table() -> None:
        color = {"Approved": "green", "Pending": "yellow"}.get(response.state, "red")
        # The state and provider code are gateway text: escaped, never read as Rich markup.
        # Lines break between phrases only (a narrow terminal never splits "Approved (...)").
        out().print(fit_phrases([
            f"{tag}{VERB[op]} {money} of {escape(ref)}",
            f"as {escape(req.client_system_transaction_id)}:",
            f"[{color}]{escape(response.state)}[/]"
            + (f" ({escape(response.provider_state_code)})" if response.provider_state_code
               else ""),
        ]), soft_wrap=True)
        if response.state == "Approved" and op != "reverse":
            left = plan.remaining_after
            what = "capturable" if op == "capture" else "refundable"
            out().print(f"Remaining {what}: {format_major(left, req.currency_code)}")

    show(View(rows=[row], document=row, table=table), fmt)
    sys.stdout.flush()  # the answer first, then the exit's error line (a refusal) on stderr
