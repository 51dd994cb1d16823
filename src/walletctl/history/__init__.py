"""The history (audit log) of money-moving actions, and the desk's rules.

Single commands use :func:`recording` (one context manager around plan, confirm and send);
batches use :class:`~walletctl.history.store.HistoryStore` (the interface of both backends)
directly (``begin_many`` /
``complete_many``, one transaction per chunk of rows). ``docs/history.md`` describes both.
"""

from __future__ import annotations

from walletctl.history.location import (
    history_location,
    open_for,
    open_history,
    open_location,
)
from walletctl.history.recorder import Recording, recording

__all__ = ["Recording", "history_location", "open_for", "open_history",
           "open_location", "recording"]
