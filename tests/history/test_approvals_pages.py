"""The approvals listing reads the history a page at a time (by id): every request comes
once, oldest first, across page boundaries, with a batch request's bound rows read between
pages and the state filter applied as before."""

from __future__ import annotations

from pathlib import Path

from walletctl.history import approvals
from walletctl.history.approvals import LISTING_PAGE, Request
from walletctl.history.sqlite import SqliteHistory


def test_the_listing_crosses_pages(tmp_path: Path) -> None:
    total = LISTING_PAGE * 2 + 1
    batch_at = LISTING_PAGE  # the last of the first page: its rows read before the next
    with SqliteHistory(tmp_path / "history.sqlite3") as store:
        for i in range(1, total + 1):
            batch = i == batch_at
            request = Request(
                kind="batch" if batch else "single", profile="shop",
                base_url="http://127.0.0.1:8765", merchant_id="M-1", store_id="S-1",
                operation="refund", original_ref=None if batch else f"ORDER-{i}",
                amount=None if batch else "900.00", currency=None if batch else "EUR",
                batch_file="big.csv" if batch else None, batch_sha256="0" * 64 if batch
                else None, batch_rows=2 if batch else None,
                bound_rows=((1, "B-1", "900.00", "EUR"), (2, "B-2", "901.00", "EUR"))
                if batch else ())
            approvals.file_request(store, request, now="2026-01-01T00:00:00.000Z",
                                   expires_at=("2026-01-02T00:00:00.000Z" if i % 3
                                               else "2025-01-01T00:00:00.000Z"),
                                   host="desk")
        now = "2026-01-01T01:00:00.000Z"
        listed = list(approvals.listing(store, now=now))
        pending = list(approvals.listing(store, now=now, state="pending"))
    assert [a.id for a in listed] == list(range(1, total + 1))
    detail = listed[batch_at - 1].batch_detail
    assert detail is not None
    assert '"B-2"' in detail
    assert [a.id for a in pending] == [i for i in range(1, total + 1) if i % 3]
