"""Transaction records (spec 2.5) as a Rich table, JSON, NDJSON or CSV."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletctl.errors import RefusedError
from walletctl.models.ledger import balance_from_records
from walletctl.models.money import format_major
from walletctl.models.records import TransactionRecord
from walletctl.render.output import emit

STATE_STYLES = {
    "approved": "green",
    "pending": "yellow",
    "errored": "bold red",
    "declined": "red",
    "cancelled": "magenta",
    "expired": "dim",
}
CSV_COLUMNS = (
    "clientSystemTransactionId",
    "clientSystemInvoiceId",
    "type",
    "state",
    "providerStateCode",
    "transactionAmount",
    "currencyCode",
    "transactionDateTime",
    "id",
)


def record_dict(record: TransactionRecord) -> dict[str, Any]:
    """The record in the spec's spelling; ``transactionAmount`` as a major-unit string."""
    data = record.model_dump(mode="json", by_alias=True)
    data["transactionAmount"] = format(record.transaction_amount, "f")
    return data


def render_records(records: Sequence[TransactionRecord], fmt: str, reference: str) -> None:
    rows = [record_dict(r) for r in records]
    emit(fmt, rows, columns=CSV_COLUMNS, table=lambda: _table(records, reference))


def _table(records: Sequence[TransactionRecord], reference: str) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from walletctl.render.console import out

    # Cells are gateway text: escape it, or a "[" in a state would be read as Rich markup.
    table = Table(
        title=f"Transactions for {escape(reference)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("Reference", no_wrap=True)
    table.add_column("Type", no_wrap=True)
    table.add_column("State", no_wrap=True)
    table.add_column("Amount", justify="right", no_wrap=True)
    table.add_column("Provider state", overflow="fold")
    table.add_column("Date/time (as given)", overflow="fold")
    for rec in records:
        style = STATE_STYLES.get(rec.state.lower(), "")
        state = escape(rec.state)
        table.add_row(
            escape(rec.client_system_transaction_id),
            escape((rec.type or "").removeprefix("ecom.")),
            f"[{style}]{state}[/]" if style else state,
            format_major(rec.transaction_amount, rec.currency_code.upper()),
            escape(rec.provider_state_code or ""),
            escape(rec.transaction_date_time or ""),
        )
    console = out()
    console.print(table)
    try:
        balance = balance_from_records(reference, records)
    except RefusedError:  # a reference that is itself a follow-up has no balance line
        return
    console.print(
        f"Balance: {balance.summary()}; capturable "
        f"{format_major(balance.capturable, balance.currency)}, refundable "
        f"{format_major(balance.refundable, balance.currency)}"
    )
