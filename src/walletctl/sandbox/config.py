"""Sandbox settings, the outcome a magic test amount chooses and the running app's context;
cheap to import (no FastAPI / uvicorn): ops checks ``sandbox serve``'s options with it before
anything is served. The documented values themselves are data in
:mod:`walletctl.models.sandbox_values`. Faults: docs/sandbox.md, "Faults"."""

from __future__ import annotations

import ipaddress
import random
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from walletctl.models.money import AmountFormat, exponent

# the documented values: plain data the CLI shows too (models/sandbox_values.py)
from walletctl.models.sandbox_values import (
    DEFAULT_API_KEY,
    DEFAULT_BODY_BUDGET,
    DEFAULT_HEADER_BUDGET,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SERVICE_SECRET,
    DEFAULT_WRITE_TIMEOUT,
    MAGIC,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from walletctl.sandbox.store import Store

MAX_LATENCY_MS = 10_000
MAX_RETRY_AFTER_S = 60
MAX_HEADER_BYTES = 64 * 1024  # request line and headers (sandbox/server.py)
HEAD_TOO_LARGE = f"(request): request line and headers larger than {MAX_HEADER_BYTES} bytes"
MAX_REQUEST_TIMEOUT = 3600.0


def utc_now() -> datetime:
    return datetime.now(UTC)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host in ("localhost", "testserver"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_origin(value: str) -> str:
    """``value`` as a normalized origin; ValueError naming the rule otherwise."""
    text = value.strip()
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or port == -1 or \
            parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"--allow-origin {value!r}: must be an origin like "
                         "https://shop.example or http://localhost:8000 (scheme, host, "
                         "optional port; no path)")
    origin = f"{parts.scheme.lower()}://{parts.hostname.lower()}"
    return origin + (f":{port}" if port is not None else "")


def parse_origins(values: Iterable[str]) -> tuple[str, ...] | None:
    """``--allow-origin`` values -> allowed origins; ``None`` (any) for none or ``*``."""
    items = [v for v in values if v.strip()]
    if not items or any(v.strip() == "*" for v in items):
        return None
    return tuple(dict.fromkeys(parse_origin(v) for v in items))

# short names of settings; any other is its field name, dashed or snake_case
_ALIASES = {"latency": "latency_ms", "jitter": "jitter_ms", "status": "error_status"}


@dataclass(frozen=True)
class FaultConfig:
    """Bounded fault injection for ``/api/v5`` routes (never for ``/_sandbox``)."""

    latency_ms: int = 0
    jitter_ms: int = 0
    error_rate: float = 0.0
    error_status: int = 503
    throttle_rate: float = 0.0
    retry_after: int = 1
    drop_rate: float = 0.0
    error_after_rate: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("latency_ms", "jitter_ms"):
            value = getattr(self, name)
            if not 0 <= value <= MAX_LATENCY_MS:
                raise ValueError(f"{name}: must be between 0 and {MAX_LATENCY_MS} ms")
        for name in ("error_rate", "throttle_rate", "drop_rate", "error_after_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}: must be a rate between 0 and 1")
        if not 500 <= self.error_status <= 599:
            raise ValueError("error_status: must be a 5xx status")
        if not 0 <= self.retry_after <= MAX_RETRY_AFTER_S:
            raise ValueError(f"retry_after: must be between 0 and {MAX_RETRY_AFTER_S} seconds")

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in (
            "latency_ms", "jitter_ms", "error_rate", "throttle_rate", "drop_rate",
            "error_after_rate"))

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[Any, Any]]) -> FaultConfig:
        """Build from ``(name, value)`` pairs (dashed or snake_case names); ValueError naming
        the field as the caller spelled it, also for one setting given twice."""
        values: dict[str, Any] = {}
        spelled: dict[str, str] = {}  # setting -> the key the caller used for it
        names = {f.name for f in fields(cls)}
        for raw_key, raw in pairs:
            key = str(raw_key).strip().lower()
            name = _ALIASES.get(key) or (key.replace("-", "_") if key.replace("-", "_") in names
                                      else None)
            if name is None:
                raise ValueError(f"{raw_key}: unknown fault setting")
            if name in spelled:
                raise ValueError(f"{spelled[name]}: is given more than once (also as "
                                 f"{str(raw_key)!r}; one spelling, once)")
            spelled[name] = str(raw_key)
            values[name] = _coerce(name, raw, spelled[name])
        try:
            return cls(**values)
        except ValueError as exc:  # __post_init__ names the field: name it as it was given
            field_name, sep, rule = str(exc).partition(": ")
            if sep and field_name in spelled:
                raise ValueError(f"{spelled[field_name]}: {rule}") from None
            raise

    @classmethod
    def parse_header(cls, text: str) -> FaultConfig:
        """Parse ``latency=50;error-rate=0.2;...`` (the ``X-Sandbox-Fault`` grammar)."""
        pairs: list[tuple[str, str]] = []
        for part in text.replace(",", ";").split(";"):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"{part}: expected name=value")
            pairs.append((key.strip(), value.strip()))
        return cls.from_pairs(pairs)


_WHOLE = re.compile(r"-?[0-9]+", re.ASCII)
_SEED_DIGITS = 20  # a seed is any integer of at most this many digits


def _coerce(name: str, raw: Any, label: str) -> Any:
    """``raw`` as setting ``name``'s type (errors name it ``label``), at a cost bounded by its
    length: whole numbers are range-checked on their digits, rates as ``Decimal``."""
    if isinstance(raw, bool):
        raise ValueError(f"{label}: must be a number")
    if name == "seed" and raw is None:
        return None
    text = str(raw).strip()
    return _rate(text, label) if name.endswith("_rate") else _whole(name, text, label)


def _rate(text: str, label: str) -> float:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{label}: must be a number") from None
    if not number.is_finite() or not 0 <= number <= 1:
        raise ValueError(f"{label}: must be a rate between 0 and 1")
    return float(number)


def _whole(name: str, text: str, label: str) -> int:
    if not _WHOLE.fullmatch(text):
        try:
            Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{label}: must be {'an integer' if name == 'seed' else 'a number'}"
                             ) from None
        raise ValueError(f"{label}: must be a whole number (digits only, no fraction or "
                         "exponent)")
    digits = text.lstrip("-").lstrip("0")
    if name == "seed":
        if len(digits) > _SEED_DIGITS:
            raise ValueError(f"{label}: must be an integer of at most {_SEED_DIGITS} digits")
        return int(text)
    if text.startswith("-") and digits:
        return -1  # below every range: __post_init__ names the rule
    return int(digits or "0") if len(digits) <= 9 else 10**9  # above every range


@dataclass
class SandboxConfig:
    """Everything :func:`walletctl.sandbox.app.create_app` needs. ``public_url``: the base of
    the sandbox's own links (None: the request's Host)."""

    db_path: str | None = None
    amount_format: AmountFormat = "minor"
    clock: Callable[[], datetime] = utc_now
    faults: FaultConfig = field(default_factory=FaultConfig)
    public_url: str | None = None
    api_key: str = field(default=DEFAULT_API_KEY, repr=False)
    # "" = the api_key when one was given, else sandbox-secret: a sandbox with its own key
    # leaves no default secret to mint working keys with
    service_secret: str = field(default="", repr=False)
    host: str = "127.0.0.1"
    allow_clock_control: bool = False
    quiet: bool = False
    # origins whose pages may call the browser-wallet routes (None: any; see middleware.py)
    allowed_origins: tuple[str, ...] | None = None
    # X-Sandbox-Token required on admin routes (/_sandbox/*) when set; ``serve`` sets one
    # on a non-loopback bind. Never printed by repr.
    admin_token: str | None = field(default=None, repr=False)
    # extra Host names accepted besides loopback, the bound address and public_url's host
    allowed_hosts: tuple[str, ...] = ()
    # a complete request within this many seconds of connecting / of the previous response
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    # open connections at most (0: half the descriptor limit, see sandbox/server.py)
    max_connections: int = 0
    # an answer not taken by the client within this many seconds closes its connection
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    # bytes of request bodies held at once, across all connections (more: 503)
    body_budget: int = DEFAULT_BODY_BUDGET
    # bytes of request heads not yet complete, across all connections (more: 503)
    header_budget: int = DEFAULT_HEADER_BUDGET

    def __post_init__(self) -> None:
        for name in ("request_timeout", "write_timeout"):
            if not 0 < getattr(self, name) <= MAX_REQUEST_TIMEOUT:
                raise ValueError(f"{name}: must be more than 0 and at most "
                                 f"{MAX_REQUEST_TIMEOUT:g} seconds")
        for name in ("body_budget", "header_budget"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be a positive number of bytes")
        if self.max_connections < 0:
            raise ValueError("max_connections: must be 0 (automatic) or a positive number")
        if not self.service_secret:
            self.service_secret = (self.api_key if self.api_key != DEFAULT_API_KEY
                                   else DEFAULT_SERVICE_SECRET)
        if self.amount_format not in ("minor", "decimal"):
            raise ValueError("amount_format: must be minor or decimal")
        if self.faults.active and not is_loopback(self.host):
            raise ValueError("faults: fault injection is only allowed on a loopback host")


@dataclass
class SandboxContext:
    """What the routes share: the settings, the store, the clock (plus any
    ``/_sandbox/clock`` offset), faults and RNGs."""

    config: SandboxConfig
    store: Store
    clock_offset: timedelta = timedelta(0)
    faults: FaultConfig = field(default_factory=FaultConfig)
    stopping: bool = False  # set when the server stops: injected delays end at once
    _rngs: dict[int | None, random.Random] = field(default_factory=dict, repr=False)
    _rng_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def now(self) -> datetime:
        return self.config.clock() + self.clock_offset

    def base_url(self, request: Request) -> str:
        """Where the sandbox's own links point: the public URL, else the request's base."""
        return (self.config.public_url or str(request.base_url)).rstrip("/")

    def rng(self, seed: int | None) -> random.Random:
        """One RNG per seed, kept across requests so a seeded run is reproducible."""
        with self._rng_lock:
            return self._rngs.get(seed) or self._rngs.setdefault(seed, random.Random(seed))

    def reset_rngs(self) -> None:
        with self._rng_lock:
            self._rngs.clear()


# -- magic test amounts (models/sandbox_values.py): the outcome an amount chooses ------------


def magic_of(amount: Decimal, currency: str) -> str | None:
    """The provider outcome chosen by the amount's last two minor-unit digits."""
    return MAGIC.get(minor_units(amount, currency) % 100)


def minor_units(amount: Decimal, currency: str) -> int:
    """``amount`` in minor units of ``currency`` (EUR 12.01 -> 1201)."""
    return int(amount.scaleb(exponent(currency)).to_integral_value())
