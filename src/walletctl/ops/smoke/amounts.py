"""The smoke scenarios' amounts: :class:`Amounts`, with ``--amount NAME=VALUE`` overrides.

Amounts are whole major units by default so they are valid in every currency (JPY, EUR, BHD)
and never hit the sandbox's magic endings (01-05: see ``walletctl.sandbox.config``);
``--amount NAME=VALUE`` overrides them (e.g. for a gateway with a minimum amount).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from decimal import Decimal

from walletctl.errors import UsageError


@dataclass(frozen=True)
class Amounts:
    """Scenario amounts in major units of the run's currency (``--amount NAME=VALUE``)."""

    sale: Decimal = Decimal(10)
    preauth: Decimal = Decimal(50)
    capture1: Decimal = Decimal(20)
    capture2: Decimal = Decimal(15)
    refund: Decimal = Decimal(5)
    reversal_preauth: Decimal = Decimal(30)
    refusal_preauth: Decimal = Decimal(40)
    wallet_sale: Decimal = Decimal(12)
    wallet_preauth: Decimal = Decimal(25)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def with_overrides(self, pairs: list[str]) -> Amounts:
        """Apply ``NAME=VALUE`` pairs; raises UsageError naming the bad pair."""
        from walletctl.models.money import to_decimal

        changes: dict[str, Decimal] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in self.names():
                raise UsageError(
                    f"--amount: {pair!r} must be NAME=VALUE with NAME one of "
                    + ", ".join(self.names())
                )
            try:
                amount = to_decimal(value.strip())
            except ValueError as exc:
                raise UsageError(f"--amount {name}: {exc}") from None
            if amount <= 0:
                raise UsageError(f"--amount {name}: must be greater than zero")
            changes[name] = amount
        return replace(self, **changes)
