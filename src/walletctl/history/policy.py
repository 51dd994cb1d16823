"""The desk's rules from a profile's ``[history]`` table, enforced before anything is sent.

* ``require_reason = ["refund", "reverse"]`` (or ``true`` for every operation): ``--reason``
  is required;
* ``limits = {refund = "100.00"}``: above that amount the operation needs ``--reason`` *and*
  a typed confirmation of the amount (asked on a terminal, or ``--confirm-amount 150.00``
  without one; ``--yes`` does not replace it).

A breach raises :class:`PolicyRefusal` (a pre-flight refusal, exit 5), which the history
records as ``refused``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from walletctl.errors import RefusedError, RequestValidationError

MAX_REASON = 500


class PolicyRefusal(RefusedError):
    pass


def clean_reason(reason: str | None) -> str | None:
    """``--reason``: 1-500 printable characters (surrounding spaces dropped)."""
    if reason is None:
        return None
    text = reason.strip()
    if not text:
        raise RequestValidationError([("--reason", "must not be empty")])
    if len(text) > MAX_REASON:
        raise RequestValidationError([("--reason", f"at most {MAX_REASON} characters")])
    if not text.isprintable():
        raise RequestValidationError([("--reason", "must not contain control characters")])
    return text


def check_policy(
    *,
    profile_name: str,
    operation: str,
    amount: Decimal,
    currency: str,
    require_reason: tuple[str, ...],
    limits: dict[str, str],
    reason: str | None,
    confirm_amount: str | None,
    ask: Callable[[str], str] | None,
) -> None:
    """Refuse what the profile's rules forbid. ``ask`` prompts on a terminal (None: none)."""
    money = f"{amount:f} {currency}"
    where = f"profile {profile_name}"
    if operation in require_reason and reason is None:
        raise PolicyRefusal(
            f"{operation} refused by {where}: a reason is required; nothing was sent",
            hint='add --reason "why" (it is recorded in the history)',
        )
    limit = limits.get(operation)
    if limit is None or amount <= Decimal(limit):
        return
    if reason is None:
        raise PolicyRefusal(
            f"{operation} of {money} refused by {where}: above its limit of {limit} {currency} "
            "a reason is required; nothing was sent",
            hint='add --reason "why" and confirm the amount',
        )
    typed = confirm_amount
    if typed is None and ask is not None:
        typed = ask(
            f"{operation.capitalize()} of {money} is above {where}'s limit of {limit}. "
            "Type the amount to confirm"
        )
    if typed is None:
        raise PolicyRefusal(
            f"{operation} of {money} refused by {where}: above its limit of {limit} {currency} "
            "the amount must be typed to confirm; nothing was sent",
            hint=f"without a terminal, pass --confirm-amount {amount:f}",
        )
    text = typed.strip()
    try:  # ASCII only: Decimal() would also read other scripts' digits
        same = text.isascii() and Decimal(text) == amount
    except (InvalidOperation, ValueError):
        same = False
    if not same:
        raise PolicyRefusal(
            f"{operation} refused: the confirmed amount {typed.strip()[:40]!r} is not {money}; "
            "nothing was sent"
        )
