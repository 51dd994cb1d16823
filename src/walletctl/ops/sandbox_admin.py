"""What can be done to a running sandbox through its admin routes (``/_sandbox/*``, over
:class:`walletctl.client.admin.SandboxAdmin`): decide a checkout, reset, read the ledger,
faults and clock, the 3DS challenge, and seeding approved test transactions. Used by the
``walletctl sandbox`` commands and the pytest plugin (:mod:`walletctl.testing`).
"""

from __future__ import annotations

import csv
import random
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.client.admin import (
    CLOCK,
    FAULTS,
    HEALTH,
    LEDGER,
    RESET,
    SEED,
    THREE_DS_CHALLENGE,
    SandboxAdmin,
    SandboxRefused,
    SandboxUnreachable,
)
from walletctl.errors import UsageError, WalletctlError
from walletctl.models.money import exponent, parse_major

SEED_CHUNK = 5_000  # transactions per POST /_sandbox/seed (the route takes up to 10,000)


# --------------------------------------------------------------------------- one route each


def _call(base: str, method: str, path: str, *, token: str | None = None,
          json_body: Any = None) -> dict[str, Any]:
    """One admin route's answer (see :meth:`SandboxAdmin.call`)."""
    with SandboxAdmin(base, token=token) as admin:
        return admin.call(method, path, json_body=json_body)


def health(base: str, *, token: str | None = None) -> dict[str, Any]:
    return _call(base, "GET", HEALTH, token=token)


def amount_format(base: str) -> str:
    """The sandbox's wire amount format, from its health route (minor when it cannot say)."""
    try:
        return str(health(base).get("amountFormat") or "minor")
    except WalletctlError:
        return "minor"


def decide(base: str, reference: str, action: str, *, params: dict[str, str] | None = None,
           token: str | None = None) -> dict[str, Any]:
    """Approve, decline or cancel a pending checkout as its customer would."""
    with SandboxAdmin(base, token=token) as admin:
        return admin.decide(reference, action, params)


def reset(base: str, *, token: str | None = None) -> dict[str, Any]:
    """Forget every transaction and issued key."""
    return _call(base, "POST", RESET, token=token)


def ledger(base: str, *, token: str | None = None) -> dict[str, Any]:
    """Every transaction the sandbox holds (``transactions``), oldest first."""
    return _call(base, "GET", LEDGER, token=token)


def advance_clock(base: str, seconds: float, *, token: str | None = None) -> dict[str, Any]:
    """Move the sandbox's clock (``--clock-control`` sandboxes only); its new ``now``."""
    return _call(base, "POST", CLOCK, token=token, json_body={"advanceSeconds": seconds})


def three_ds_challenge(base: str, account: str, *, merchant_id: str, store_id: str,
                       outcome: str, token: str | None = None) -> dict[str, Any]:
    """The sandbox's 3DS challenge for a Card account, passed (``success``) or failed (an
    admin route: ``token`` when the sandbox has one)."""
    data = _call(base, "POST", THREE_DS_CHALLENGE, token=token, json_body={
        "transactionAccountId": account, "merchantId": merchant_id, "storeId": store_id,
        "outcome": outcome})
    return {"transactionAccountId": account,
            **{k: data.get(k) for k in ("threeDSServerTransId", "authenticationValue", "eci",
                                        "transStatus")}}


def failure_line(exc: WalletctlError, base: str) -> str:
    """One line for a failed admin call naming its request (what the pytest plugin raises):
    ``POST /_sandbox/reset: HTTP 401 ...`` or ``...: cannot reach the sandbox at URL (...)``."""
    if isinstance(exc, SandboxUnreachable):
        return f"{exc.request}: cannot reach the sandbox at {base} ({exc.cause})"
    if isinstance(exc, SandboxRefused):
        return f"{exc.request}: HTTP {exc.status} {exc.detail or exc.description or ''}".strip()
    return exc.message


# --------------------------------------------------------------------------- faults


def current_faults(base: str, *, token: str | None = None) -> dict[str, Any]:
    return _call(base, "GET", FAULTS, token=token)


def set_faults(base: str, settings: dict[str, Any], *, token: str | None = None) -> dict[str, Any]:
    """Replace the sandbox's faults with ``settings``; the faults now in force."""
    return _call(base, "POST", FAULTS, token=token, json_body=settings)


def update_faults(base: str, changes: dict[str, Any], *, clear: bool,
                  token: str | None) -> dict[str, Any]:
    """The sandbox's faults after ``changes`` (on top of the current ones, or of none with
    ``clear``); no change and no clear only reads them."""
    with SandboxAdmin(base, token=token) as admin:
        if not changes and not clear:
            return admin.call("GET", FAULTS)
        merged = {} if clear else admin.call("GET", FAULTS)
        merged.update(changes)
        return admin.call("POST", FAULTS, json_body=merged)


# --------------------------------------------------------------------------- seed


@dataclass(frozen=True)
class SeedPlan:
    count: int
    kind: str  # sale | preauth
    currency: str
    merchant_id: str
    store_id: str
    low: Decimal
    high: Decimal
    pattern: str  # str.format pattern with {n} (and optionally {run})
    random_seed: int | None = None
    run: str = field(default_factory=lambda: secrets.token_hex(3))  # {run}: new on each run


@dataclass(frozen=True)
class SeedResult:
    created: int
    kind: str
    currency: str
    csv: str  # the file written ("-" = stdout)
    total: Decimal
    first: str
    last: str


def parse_amounts(text: str, currency: str) -> tuple[Decimal, Decimal]:
    """``12.50`` (every one) or ``5.00-50.00`` (a range) -> (low, high), checked."""
    low_text, dash, high_text = text.strip().partition("-")
    try:
        low = parse_major(low_text.strip(), currency)
        high = parse_major(high_text.strip(), currency) if dash else low
    except (ValueError, ArithmeticError) as exc:
        raise UsageError(f"--amount: {exc} (e.g. 12.50, or a range 5.00-50.00)") from None
    if not (low.is_finite() and high.is_finite()) or low <= 0 or high < low:
        raise UsageError("--amount: must be greater than 0, a range low-high with low <= high")
    if low == high and int(low.scaleb(exponent(currency))) % 100 in (1, 3, 4):
        raise UsageError("--amount: ends in 01, 03 or 04, a sandbox magic value that is never "
                         "approved; seeded transactions are approved, use another amount")
    return low, high


def check_pattern(pattern: str) -> None:
    """The reference pattern formats with n and run into a valid reference."""
    from walletctl.models.fields import check_reference

    if "{n" not in pattern:
        raise UsageError("--ref: must contain {n} (the transaction's number), e.g. seed-{n:04}")
    try:
        sample = pattern.format(n=1, run="a1b2c3")
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        raise UsageError(f"--ref: not a usable pattern ({type(exc).__name__}); placeholders "
                         "are {n} (e.g. {n:04}) and {run}") from None
    try:  # the one reference rule (models.fields), not a second version of it
        check_reference(sample)
    except ValueError as exc:
        raise UsageError(f"--ref: the pattern gives {sample[:70]!r}, which {exc}") from None


def _amounts(plan: SeedPlan) -> Iterator[Decimal]:
    """Amounts in [low, high]; a range never ends in a magic value (01-05 minor units)."""
    exp = exponent(plan.currency)
    low = int(plan.low.scaleb(exp))
    high = int(plan.high.scaleb(exp))
    rng = random.Random(plan.random_seed)
    plain = [m for m in range(low, min(high, low + 200) + 1) if not 1 <= m % 100 <= 5]
    if low == high:
        while True:
            yield plan.low
    if not plain:
        raise UsageError("--amount: the range holds only magic amounts (ending in 01-05)")
    while True:
        minor = rng.randint(low, high)
        if 1 <= minor % 100 <= 5:
            minor = minor + 5 if minor + 5 <= high else minor - 5
            if 1 <= minor % 100 <= 5 or minor < low:
                minor = rng.choice(plain)
        yield Decimal(minor).scaleb(-exp)


def seed(base: str, plan: SeedPlan, target: str, *, token: str | None) -> SeedResult:
    """Create ``plan.count`` approved transactions in the sandbox and write their CSV
    (``ref,amount,currency``: ready for capture/reverse --batch, or refund --batch for sales)."""
    amounts = _amounts(plan)
    rows = [(plan.pattern.format(n=n, run=plan.run), next(amounts))
            for n in range(1, plan.count + 1)]
    if len({ref for ref, _ in rows}) != len(rows):
        raise UsageError("--ref: the pattern gives the same reference twice (use {n})")
    fh = sys.stdout if target == "-" else _open(target)
    try:
        with SandboxAdmin(base, token=token) as admin:
            for start in range(0, len(rows), SEED_CHUNK):
                chunk = rows[start:start + SEED_CHUNK]
                admin.call("POST", SEED, json_body={
                    "merchantId": plan.merchant_id, "storeId": plan.store_id,
                    "currency": plan.currency, "kind": plan.kind,
                    "transactions": [{"reference": r, "amount": f"{a:f}"} for r, a in chunk],
                })
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("ref", "amount", "currency"))
        writer.writerows((ref, f"{amount:f}", plan.currency) for ref, amount in rows)
    finally:
        if fh is not sys.stdout:
            fh.close()
    return SeedResult(created=len(rows), kind=plan.kind, currency=plan.currency, csv=target,
                      total=sum((a for _, a in rows), Decimal(0)), first=rows[0][0],
                      last=rows[-1][0])


def _open(target: str) -> Any:
    """The CSV file, opened before anything is created in the sandbox."""
    try:
        return Path(target).open("w", encoding="utf-8", newline="")
    except OSError as exc:
        raise UsageError(f"--csv {target}: cannot write it ({exc.strerror or exc})") from None
