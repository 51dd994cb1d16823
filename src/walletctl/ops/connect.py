"""The gateway client a command works with, opened for its profile: the CLI asks here and
names no client module (``make_client`` in :mod:`walletctl.cli.common`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the types a command holds, named for it here (explicitly re-exported)
    from walletctl.client.gateway import GatewayClient as GatewayClient
    from walletctl.client.gateway import PreparedCall as PreparedCall
    from walletctl.config.profile import Profile


def open_client(profile: Profile, *, transport: Any = None,
                trace: Callable[[str], None] | None = None) -> GatewayClient:
    """A synchronous client of ``profile``'s gateway (``transport``: an httpx transport, as
    tests swap it; ``trace``: where each request's masked trace line goes)."""
    from walletctl.client import gateway

    return gateway.GatewayClient(profile, transport=transport, trace=trace)
