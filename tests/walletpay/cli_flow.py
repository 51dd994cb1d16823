"""The merchant server's side of a browser payment, done with the real CLI: authorize the
payment account a `runWalletPay` result carries (with a 3DS result for a Card account)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx


def authorize_event(cli: Any, sandbox_url: str, tmp_path: Path, detail: dict[str, Any],
                    key_id: str, *, is_token: bool, hidden: tuple[str, ...]) -> dict[str, Any]:
    """``walletctl authorize --event`` for 12.34 EUR; the answer as JSON."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps(detail))
    extra: list[str] = []
    if not is_token:
        three = httpx.post(f"{sandbox_url}/_sandbox/3ds/challenge", json={
            "transactionAccountId": detail["transactionAccountId"], "merchantId": "M-1001",
            "storeId": "S-01"}).json()
        (tmp_path / "3ds.json").write_text(json.dumps(three))
        extra = ["--3ds", str(tmp_path / "3ds.json")]
        hidden = (three["authenticationValue"],)
    tx: dict[str, Any] = cli("authorize", "--event", str(event), "--encryption-key-id", key_id,
                             "--amount", "12.34", "--yes", *extra, hidden=hidden)
    return tx
