"""Placeholder: the browser-wallet engineer owns and replaces this module."""

from __future__ import annotations

from typing import Any


def install(app: Any, ctx: Any) -> None:
    """Add the browser-wallet routes to ``app`` (placeholder: nothing yet)."""
