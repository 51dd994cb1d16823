"""The browser-wallet scenario's steps (keys -> payment account -> authorize -> capture)."""

from __future__ import annotations

from walletctl.ops.smoke.framework import RunContext, Step


def unavailable(ctx: RunContext) -> str | None:
    """A reason when the browser-wallet pieces are not there yet, else None."""
    import importlib.util

    if importlib.util.find_spec("walletctl.ops.walletpay") is None:
        return "browser-wallet operations (walletctl.ops.walletpay) are not available"
    return None


def steps() -> tuple[Step, ...]:
    return (Step("browser wallet", lambda run: None),)
