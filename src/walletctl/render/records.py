"""Transaction records (spec 2.5) as a Rich table, JSON, NDJSON or CSV."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletctl.errors import RefusedError
from walletctl.masking import mask_body
from walletctl.models.ledger import balance_from_records
from walletctl.models.money import format_major
from walletctl.models.records import TransactionRecord
from walletctl.render.console import escape, out
from walletctl.render.fit import fit_phrases, natural_width, print_table, terminal_width
from walletctl.render.formats import View, show

STATE_STYLES = {"approved": "green", "pending": "yellow", "errored": "bold red",
                "declined": "red", "cancelled": "magenta", "expired": "dim"}
CSV_COLUMNS = ("clientSystemTransactionId", "clientSystemInvoiceId", "type", "state",
               "providerStateCode", "transactionAmount", "currencyCode", "transactionDateTime",
               "id")


def record_dict(record: TransactionRecord) -> dict[str, Any]:
    """The record in the spec's spelling; ``transactionAmount`` as a major-unit string. Fields
    the gateway added beyond the spec are kept, masked like any body (a gateway that echoes a
    key or a card number under a secret name never gets it shown)."""
    data: dict[str, Any] = mask_body(record.model_dump(mode="json", by_alias=True))
    data["transactionAmount"] = format(record.transaction_amount, "f")
    return data


def state_markup(state: str) -> str:
    """A state the gateway sent, escaped, in its colour."""
    style = STATE_STYLES.get(state.lower(), "")
    return f"[{style}]{escape(state)}[/]" if style else escape(state)


def render_records(records: Sequence[TransactionRecord], fmt: str, reference: str) -> None:
    rows = [record_dict(r) for r in records]
    show(View(rows=rows, columns=CSV_COLUMNS, table=lambda: _table(records, reference)), fmt)


def short_datetime(text: str) -> str:
    """``2026-11-22T05:51:20.3521000`` -> ``2026-11-22 05:51:20`` (for narrow terminals)."""
    date, sep, time = text.partition("T")
    if not sep:
        return text
    return f"{date} {time.split('.')[0][:8]}"


def _table(records: Sequence[TransactionRecord], reference: str) -> None:
    headers = ["Reference", "Type", "State", "Amount", "Provider state", "Date/time (as given)"]
    rows: list[list[str]] = []
    for rec in records:
        # Cells are gateway text: escaped, or a "[" in a state would be read as Rich markup.
        rows.append([
            escape(rec.client_system_transaction_id),
            escape((rec.type or "").removeprefix("ecom.")),
            state_markup(rec.state),
            format_major(rec.transaction_amount, rec.currency_code.upper()),
            escape(rec.provider_state_code or ""),
            escape(rec.transaction_date_time or ""),
        ])
    if natural_width(headers, rows) > terminal_width():  # the short date form first
        headers[5] = "Date/time"
        for row in rows:
            row[5] = short_datetime(row[5])
    print_table(f"Transactions for {escape(reference)}", headers, rows,
                justify={3: "right"}, no_wrap=(0, 3), drop=(4, 5, 1, 2))
    console = out()
    try:
        balance = balance_from_records(reference, records)
    except RefusedError:  # a reference that is itself a follow-up has no balance line
        return
    console.print(fit_phrases([
        f"Balance: {balance.summary()};",
        f"capturable {format_major(balance.capturable, balance.currency)},",
        f"refundable {format_major(balance.refundable, balance.currency)}",
    ]), soft_wrap=True)
