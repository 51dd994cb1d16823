"""The desk's rules from a profile's ``[history]`` table (``require_reason``, ``limits``),
enforced before anything is sent; a breach raises :class:`PolicyRefusal` (exit 5), recorded
as ``refused``. docs/history.md, "Desk rules", has the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from walletctl.errors import RefusedError


class PolicyRefusal(RefusedError):
    pass


def amount_rule(mapping: dict[str, str], op: str, currency: str | None) -> Decimal | None:
    """The amount ``mapping`` (``op`` or ``op.CUR`` -> amount) sets for ``op`` in
    ``currency`` (the currency's own key first); ``currency`` None: the lowest of any."""
    if currency is None:
        found = [Decimal(v) for k, v in mapping.items() if k.split(".")[0] == op]
        return min(found, default=None)
    text = mapping.get(f"{op}.{currency}", mapping.get(op))
    return None if text is None else Decimal(text)


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
    shown = amount_text(amount, currency)
    money = f"{shown} {currency}"
    where = f"profile {profile_name}"
    if operation in require_reason and reason is None:
        raise PolicyRefusal(
            f"{operation} refused by {where}: a reason is required; nothing was sent",
            hint='add --reason "why" (it is recorded in the history)',
        )
    found = amount_rule(limits, operation, currency)
    if found is None or amount <= found:
        return
    head = f"{operation} of {money} refused by {where}: above its limit of {found:f} {currency} "
    _confirm(head, head, "amount", shown, currency, amount, reason=reason,
             confirm_amount=confirm_amount, ask=ask, question=(
                 f"{operation.capitalize()} of {money} is above {where}'s limit of {found:f}. "
                 "Type the amount to confirm"))


def _confirm(head: str, mismatch_head: str, word: str, shown: str, currency: str,
             amount: Decimal, *, reason: str | None, confirm_amount: str | None,
             ask: Callable[[str], str] | None, question: str) -> None:
    """Above a limit: a reason, and the ``word`` (amount or total) typed to confirm (asked
    on a terminal, ``confirm_amount`` without one); each missing one refused."""
    if reason is None:
        raise PolicyRefusal(f"{head}a reason is required; nothing was sent",
                            hint=f'add --reason "why" and confirm the {word}')
    typed = confirm_amount
    if typed is None and ask is not None:
        typed = ask(question)
    if typed is None:
        raise PolicyRefusal(f"{head}the {word} must be typed to confirm; nothing was sent",
                            hint=f"without a terminal, pass --confirm-amount {shown}")
    if not typed_amount_is(typed, amount):
        raise PolicyRefusal(f"{mismatch_head}the confirmed {word} {typed.strip()[:40]!r} is "
                            f"not {shown} {currency}; nothing was sent")


def amount_text(amount: Decimal, currency: str | None) -> str:
    """``20`` EUR as ``20.00``: the currency's decimals, as every other output shows it."""
    from walletctl.models.money import quantize

    try:
        return f"{quantize(amount, currency) if currency else amount:f}"
    except ValueError:  # more decimals than the currency has: refused elsewhere, shown as is
        return f"{amount:f}"


def check_batch_policy(
    *,
    profile_name: str,
    operation: str,
    reason_required: bool,
    above: dict[str, tuple[int, Decimal]],
    limits: dict[str, str],
    reason: str | None,
    confirm_amount: str | None,
    ask: Callable[[str], str] | None,
) -> None:
    """:func:`check_policy` for a batch, before any of its rows is sent: rows above their
    profile's limit (``above``: currency -> (rows, total); ``limits``: profile -> its limit)
    need a reason and their TOTAL typed to confirm, one currency at a time."""
    if reason_required and reason is None:
        raise PolicyRefusal(
            f"{operation} refused by profile {profile_name}: a reason is required; nothing "
            "was sent",
            hint='add --reason "why" (it is recorded in the history of every row)',
        )
    if not above:
        return
    count = sum(rows for rows, _total in above.values())
    if len(above) > 1:
        totals = ", ".join(f"{total:f} {cur}" for cur, (_rows, total) in sorted(above.items()))
        raise PolicyRefusal(
            f"{operation} batch refused: {count} rows above {_limit_words(limits, None)} in "
            f"{len(above)} currencies ({totals}); nothing was sent",
            hint="one --confirm-amount confirms one total: split the file by currency",
        )
    ((currency, (_rows, amount)),) = above.items()
    stated = (f"{count} row{'s' if count != 1 else ''} of {operation} above "
              f"{_limit_words(limits, currency)} total {amount:f} {currency}")
    _confirm(f"{operation} batch refused: {stated}; ", f"{operation} batch refused: ", "total",
             f"{amount:f}", currency, amount, reason=reason, confirm_amount=confirm_amount,
             ask=ask, question=f"{stated}. Type the total to confirm")


def _limit_words(limits: dict[str, str], currency: str | None) -> str:
    """``profile X's limit of 100.00 EUR``, or ``the limits of profiles X (100.00), Y (50.00)``."""
    unit = f" {currency}" if currency else ""
    if len(limits) == 1:
        ((name, limit),) = limits.items()
        return f"profile {name}'s limit of {limit}{unit}"
    listed = ", ".join(f"{name} ({limit}{unit})" for name, limit in sorted(limits.items()))
    return f"the limits of profiles {listed}"


def typed_amount_is(typed: str, amount: Decimal) -> bool:
    """Whether the text an operator typed is ``amount``, read by the rule ``--amount`` is
    read by (ASCII digits, a point; no exponent, no other scripts' digits)."""
    from walletctl.models.money import to_decimal

    try:
        return to_decimal(typed.strip()) == amount
    except ValueError:
        return False
