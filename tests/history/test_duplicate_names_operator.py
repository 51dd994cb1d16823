"""The likely-duplicate hold (exit 11) names who made the earlier movement as `walletctl
history` shows it (a local file: ``user@host``), never "None"."""

from __future__ import annotations

from history_helpers import (  # desk, proxy, sandbox: fixtures, used by name
    Desk,
    desk,
    expect,
    proxy,
    sandbox,
)

__all__ = ["desk", "proxy", "sandbox"]


def test_the_hold_names_the_operator_the_history_records(desk: Desk) -> None:
    desk.preauth("HD-1", "50.00")
    desk.ok("-o", "json", "capture", "HD-1", "--amount", "10")
    [earlier] = desk.entries("--op", "capture")
    operator = earlier["operator"]
    assert "@" in operator, earlier  # a local file: user@host
    held = desk.run("capture", "HD-1", "--amount", "10")
    expect(held, 11, f"by {operator} (profile desk)")
    assert "None" not in held.stderr, held.stderr
