"""`move` runs a movement under the desk's rulebook without changing the caller's client: the
steps see the stricter profile, the client the command passed in keeps its own."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.client.gateway import GatewayClient
from walletctl.config.profile import HistorySettings, Profile
from walletctl.history.rulebook import change
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent
from walletctl.models.outcome import Planned
from walletctl.ops.money.pipeline import Ask, Desk, move

STEP = Intent(time="2026-11-25T10:00:00.000Z", os_user="me", host="h", profile="p",
              base_url="u", operation="policy", outcome="approved", exit_code=0)


class Seen:
    """A movement that only looks: which profile each step's client carried (a dry run)."""

    def __init__(self) -> None:
        self.windows: list[int] = []

    def _saw(self, client: GatewayClient) -> None:
        self.windows.append(client.profile.history.duplicate_window)

    def earlier(self, client: GatewayClient, store: Any, dry_run: bool) -> tuple[list[Any],
                                                                                 list[Any]]:
        self._saw(client)
        return [], []

    def repeated(self, judged: list[Any]) -> None:
        return None

    def plan(self, client: GatewayClient, store: Any, records: list[Any], same: Any,
             rec: Any) -> str:
        self._saw(client)
        return "plan"

    def planned(self, plan: str) -> Planned:
        return Planned(op="refund", original="O-1", new_ref="O-1-R1", amount=Decimal("5"),
                       currency="EUR")

    def hold_duplicate(self, store: Any, client: GatewayClient, plan: str,
                       records: list[Any]) -> None:
        self._saw(client)

    def send(self, client: GatewayClient, plan: str, rec: Any) -> None:
        raise AssertionError("a dry run sends nothing")


def test_move_leaves_the_callers_profile_alone(tmp_path: Path) -> None:
    profile = Profile(name="p", base_url="http://127.0.0.1:9", merchant_id="M", store_id="S",
                      user_id="u", history=HistorySettings())
    own_window = profile.history.duplicate_window
    with SqliteHistory(tmp_path / "h.sqlite3") as store:
        change(store, "duplicate_window", str(own_window + 60), step=STEP)
    seen = Seen()
    with GatewayClient(profile, auth_header=None) as client:
        moved = move(client, SqliteHistory(tmp_path / "h.sqlite3"), seen,
                     Ask(op="refund", ref="O-1", dry_run=True), Desk(confirm=lambda _p: None))
        assert moved.plan == "plan"
        # every step ran under the desk's (longer) window; the caller's client did not change
        assert seen.windows == [own_window + 60] * 3
        assert client.profile is profile
        assert client.profile.history.duplicate_window == own_window
