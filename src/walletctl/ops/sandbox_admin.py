"""Talking to a running sandbox's admin routes (``/_sandbox/*``): one call, its faults, and
seeding approved test transactions (``walletctl sandbox faults|seed`` and friends).
"""

from __future__ import annotations

import csv
import random
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from walletctl.errors import UsageError

SEED_CHUNK = 5_000  # transactions per POST /_sandbox/seed (the route takes up to 10,000)
# The fault settings of POST /_sandbox/faults (JSON names), in display order.
FAULT_FIELDS = ("latency_ms", "jitter_ms", "error_rate", "error_status", "throttle_rate",
                "retry_after", "drop_rate", "error_after_rate", "seed")


def check_token(token: str | None) -> None:
    """An HTTP header carries printable ASCII only: any other token could never be sent
    (the value itself is a secret and is not echoed)."""
    if token and not (token.isascii() and token.isprintable()):
        from walletctl.errors import UsageError

        raise UsageError("--admin-token: must be printable ASCII (letters, digits, "
                         "punctuation): it is sent in the X-Sandbox-Token header")


def serve_command(url: str, *extra: str) -> str:
    """The ``walletctl sandbox serve`` line that starts a sandbox where ``url`` points: its
    port (a sandbox otherwise picks a free one, which the profile's URL would not reach) and
    its host unless the loopback default."""
    from urllib.parse import urlsplit

    words = ["walletctl", "sandbox", "serve"]
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # not a URL a sandbox could serve: no address to give
        host = port = None
    if host is not None:
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        if host not in ("127.0.0.1", "localhost"):
            words += ["--host", host]
        words += ["--port", str(port)]
    return "`" + " ".join([*words, *extra]) + "`"


def admin_call(method: str, url: str, *, params: dict[str, str] | None = None,
               json_body: Any = None, token: str | None = None) -> Any:
    """One request to a sandbox admin route; its JSON answer, or the gateway error raised."""
    import httpx

    from walletctl.constants import SANDBOX_TOKEN_HEADER
    from walletctl.errors import GatewayError, NetworkError, ResponseError

    check_token(token)
    headers = {SANDBOX_TOKEN_HEADER: token} if token else {}
    try:
        resp = httpx.request(method, url, params=params, json=json_body, timeout=30.0,
                             headers=headers)
    except httpx.ConnectError:
        raise NetworkError(f"cannot connect to the sandbox at {url}",
                           hint=f"start it with {serve_command(url)}") from None
    except httpx.HTTPError as exc:
        raise NetworkError(f"sandbox request failed: {type(exc).__name__}") from None
    try:
        data = resp.json()
    except ValueError:
        data = None
    if resp.status_code >= 400:
        err = data if isinstance(data, dict) else {}
        details = err.get("details") if isinstance(err.get("details"), dict) else {}
        raise GatewayError(resp.status_code, code=err.get("code"),
                           description=err.get("description"),
                           detail=(details or {}).get("message"), body=data)
    if data is None:
        raise ResponseError(f"the sandbox answered HTTP {resp.status_code} without JSON")
    return data


# --------------------------------------------------------------------------- faults


def update_faults(base: str, changes: dict[str, Any], *, clear: bool,
                  token: str | None) -> dict[str, Any]:
    """The sandbox's faults after ``changes`` (on top of the current ones, or of none with
    ``clear``); no change and no clear only reads them."""
    url = f"{base}/_sandbox/faults"
    if not changes and not clear:
        current: dict[str, Any] = admin_call("GET", url, token=token)
        return current
    merged = {} if clear else dict(admin_call("GET", url, token=token))
    merged.update(changes)
    updated: dict[str, Any] = admin_call("POST", url, json_body=merged, token=token)
    return updated


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
    run: str
    random_seed: int | None = None


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
    from walletctl.models.money import exponent, parse_major

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
    from walletctl.models.money import exponent

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
        for start in range(0, len(rows), SEED_CHUNK):
            chunk = rows[start:start + SEED_CHUNK]
            admin_call("POST", f"{base}/_sandbox/seed", token=token, json_body={
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


def new_run_id() -> str:
    return secrets.token_hex(3)
