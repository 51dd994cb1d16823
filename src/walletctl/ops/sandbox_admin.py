"""A walletctl sandbox administered from outside its server (started here, in the foreground
or embedded, waited for, given a profile, driven over
:class:`~walletctl.client.admin.SandboxAdmin`): for the ``sandbox`` commands, smoke and the
pytest plugin."""

from __future__ import annotations

import csv
import errno
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from walletctl.client.admin import (
    CLOCK,
    DRIVER_TOKEN,
    FAULTS,
    HEALTH,
    RESET,
    SEED,
    THREE_DS_CHALLENGE,
    SandboxAdmin,
    SandboxRefused,
    SandboxUnreachable,
    check_token,
    serve_command,
)
from walletctl.config.profile import NEEDED_REDIRECTS
from walletctl.constants import Env
from walletctl.errors import NetworkError, UsageError, WalletctlError
from walletctl.models.money import exponent, parse_major
from walletctl.models.sandbox_values import (
    DEFAULT_API_KEY,
    DEFAULT_BODY_BUDGET,
    DEFAULT_HEADER_BUDGET,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SERVICE_SECRET,
    DEFAULT_WRITE_TIMEOUT,
)

SEED_CHUNK = 5_000  # transactions per POST /_sandbox/seed (the route takes up to 10,000)


# -- a sandbox in this process ---------------------------------------------------------------------

@contextmanager
def embedded(*, api_key: str, service_secret: str = "", amount_format: str = "minor",
             clock_control: bool = False) -> Iterator[str]:
    """A quiet sandbox on a free loopback port for the duration; yields its URL."""
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = SandboxConfig(amount_format="decimal" if amount_format == "decimal" else "minor",
                           api_key=api_key, service_secret=service_secret,
                           allow_clock_control=clock_control, quiet=True)
    with EmbeddedSandbox(config) as sandbox:
        yield sandbox.url


def default_service_secret(api_key: str) -> str:
    """What ``walletctl sandbox serve`` uses when no --service-secret is given."""
    return api_key if api_key != DEFAULT_API_KEY else DEFAULT_SERVICE_SECRET


def profile_toml(base_url: str, **options: Any) -> str:
    """:func:`walletctl.sandbox.scenario.profile_toml`, for the pytest plugin."""
    from walletctl.sandbox.scenario import profile_toml as sandbox_profile

    return sandbox_profile(base_url, **options)


# -- a sandbox in the foreground (``sandbox serve``) ----------------------------------------------

@dataclass(frozen=True)
class ServeOptions:
    """``sandbox serve``'s options, checked by :func:`serve` (``faults``: FaultConfig's fields
    by name; ``profile_name``: --write-profile, whose sandbox keeps its ledger in a file)."""

    host: str = "127.0.0.1"
    port: int = 0
    db: Path | None = None
    amount_format: str = "minor"
    api_key: str | None = None
    service_secret: str | None = None
    admin_token: str | None = field(default=None, repr=False)
    public_url: str | None = None
    clock_control: bool = False
    quiet: bool = False
    allow_origin: tuple[str, ...] = ()
    faults: Mapping[str, Any] = field(default_factory=dict)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    max_connections: int = 0
    body_budget: int = DEFAULT_BODY_BUDGET
    header_budget: int = DEFAULT_HEADER_BUDGET
    ready_file: Path | None = None
    replay: Path | None = None
    profile_name: str | None = None


@dataclass(frozen=True)
class Listening:
    """A served sandbox once it accepts requests: what its profile is made of."""

    url: str
    amount_format: str
    api_key: str = field(repr=False)
    service_secret: str = field(repr=False)
    db_path: str | None


def serve(options: ServeOptions, *, on_listen: Callable[[Listening], None] | None = None,
          out: TextIO | None = None) -> None:
    """Serve a sandbox (or, with ``options.replay``, a recording's answers) in the foreground
    until SIGINT/SIGTERM; ``on_listen`` is called once it accepts requests, ``out`` takes the
    server's lines (None: stdout). Unusable options are a UsageError before anything is
    served."""
    from walletctl.sandbox.config import FaultConfig, SandboxConfig, parse_origins

    if options.amount_format not in ("minor", "decimal"):
        raise UsageError("--amount-format: must be minor or decimal")
    check_token(options.admin_token)
    db = options.db
    if db is None and options.profile_name is not None:  # a profile outlives the process:
        db = default_sandbox_db(options.profile_name)  # so does the ledger it points at
    try:
        config = SandboxConfig(
            db_path=str(db) if db else None,
            amount_format="decimal" if options.amount_format == "decimal" else "minor",
            faults=FaultConfig(**options.faults), public_url=options.public_url,
            api_key=options.api_key or DEFAULT_API_KEY,
            # one configured secret closes every door: no default secret left to mint keys
            service_secret=options.service_secret or "",
            admin_token=options.admin_token or None, host=options.host,
            allow_clock_control=options.clock_control, quiet=options.quiet,
            allowed_origins=parse_origins(options.allow_origin),
            request_timeout=options.request_timeout, write_timeout=options.write_timeout,
            max_connections=options.max_connections, body_budget=options.body_budget,
            header_budget=options.header_budget)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    def listening(url: str) -> None:
        if on_listen is not None:
            on_listen(Listening(url, config.amount_format, config.api_key,
                                config.service_secret, config.db_path))

    hook = listening if on_listen is not None else None  # the server's own lines either way

    host, port = options.host, options.port
    if options.replay is not None:
        from walletctl.ops.fidelity import serve_replay

        serve_replay(options.replay, host=host, port=port, ready_file=options.ready_file,
                     config=config, on_listen=hook, out=out)
        return
    import sqlite3

    from walletctl.sandbox.server import serve as serve_sandbox

    try:
        serve_sandbox(host, port, config, ready_file=options.ready_file, on_listen=hook,
                      out=out)
    except sqlite3.Error as exc:
        raise UsageError(f"--db {db}: cannot use this SQLite database ({exc})") from None
    except OSError as exc:
        in_use = getattr(exc, "errno", None) == errno.EADDRINUSE
        hint = "--port 0 picks a free port (printed on the first line)" if in_use else None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                         hint=hint) from None


def demo(out: TextIO, *, keep_going: bool = False, width: int = 80,
         fit: Callable[[str], str] | None = None) -> str | None:
    """``sandbox demo``: the scenario run against an embedded sandbox, its transcript written
    to ``out``; the first failed step's label (None: every step passed)."""
    from walletctl.sandbox.scenario import run_demo

    return run_demo(out, keep_going=keep_going, width=width, fit=fit)


# -- waiting for one -------------------------------------------------------------------------------

def wait_ready(url: str, *, timeout: float = 30.0) -> dict[str, Any]:
    """Once ``url`` is a ready sandbox, the wait's record (``url``, ``waitedSeconds``,
    ``attempts``, ``version``, ``amountFormat``); a NetworkError after ``timeout`` seconds."""
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise NetworkError(f"URL: must start with http:// or https://, not {url!r}")
    start = time.monotonic()
    deadline = start + timeout
    pause, attempts, last = 0.05, 0, "no answer yet"
    with SandboxAdmin(base) as admin:
        while True:
            attempts += 1
            left = deadline - time.monotonic()
            try:
                resp = admin.send("GET", HEALTH, timeout=max(0.1, min(2.0, left)))
                data = resp.json() if resp.status_code == 200 else None
                if isinstance(data, dict) and data.get("status") == "ok":
                    return {"url": base, "ready": True,
                            "waitedSeconds": round(time.monotonic() - start, 3),
                            "attempts": attempts, "version": str(data.get("version", "")),
                            "amountFormat": str(data.get("amountFormat", ""))}
                last = f"{HEALTH} answered HTTP {resp.status_code}"
            except SandboxUnreachable as exc:
                last = exc.cause
            except ValueError:
                last = f"{HEALTH} did not answer JSON"
            if time.monotonic() + pause > deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    raise NetworkError(
        f"the sandbox at {base} was not ready after {timeout:g} s "
        f"({attempts} attempts; last: {last})",
        hint=f"start it with {serve_command(base, '--ready-file', 'PATH')}, or raise --timeout")


# -- its profile -----------------------------------------------------------------------------------

MERCHANT_ID = "M-1001"
STORE_ID = "S-01"
USER_ID = "ops-bot"
REDIRECTS = {key: "https://shop.example" + path for key, path in NEEDED_REDIRECTS.items()}


def profile_table(url: str, *, amount_format: str, api_key: str, service_secret: str,
                  default_key: str) -> dict[str, Any]:
    auth: dict[str, Any] = {"scheme": "PublicApiKey"}
    if api_key != default_key and os.environ.get(Env.SANDBOX_API_KEY) == api_key:
        auth["key_env"] = Env.SANDBOX_API_KEY
    else:
        auth["key"] = api_key
    auth["service_secret"] = service_secret
    return {"base_url": url, "merchant_id": MERCHANT_ID, "store_id": STORE_ID,
            "user_id": USER_ID, "amount_format": amount_format, "currency": "EUR",
            "environment": "test",  # a sandbox's: never production
            "auth": auth, "redirects": dict(REDIRECTS)}


def profile_text(name: str, table: dict[str, Any]) -> str:
    """The profile as a TOML profiles file of its own (what --print-profile prints)."""
    import tomlkit

    from walletctl.config.profiles_file import toml_table

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"walletctl profile for the sandbox at {table['base_url']}"))
    doc.add(tomlkit.comment("(written by `walletctl sandbox serve --print-profile`; keep it "
                            "chmod 600: it holds the sandbox's test credentials)"))
    doc.add("default_profile", name)
    profiles = tomlkit.table(is_super_table=True)
    profiles.add(name, toml_table(table))
    doc.add("profiles", profiles)
    return tomlkit.dumps(doc)


def write_profile(config: Path | None, name: str, table: dict[str, Any]) -> Path:
    """Add (or update a sandbox's) profile ``name`` in the selected profiles file."""
    from walletctl.config.profiles_file import add_profile, config_path, load_file
    from walletctl.sandbox.config import is_loopback

    path = config_path(config)
    replace = False
    if path.exists():
        existing = load_file(path).profiles.get(name)
        if existing is not None:
            why = ("is a production profile; a sandbox never replaces it"
                   if existing.is_production
                   else None if is_loopback(urlsplit(existing.base_url).hostname or "")
                   else f"points to {existing.base_url}, not a local sandbox")
            if why is not None:
                raise UsageError(
                    f"--write-profile {name}: profile {name!r} exists and {why}",
                    hint="pick another name (the sandbox's profile is replaced on each start)")
            replace = True
    add_profile(path, name, table, replace=replace)
    return path


# -- one route each --------------------------------------------------------------------------------

def _call(base: str, method: str, path: str, *, token: str | None = None,
          json_body: Any = None) -> dict[str, Any]:
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


@contextmanager
def ledger(base: str, *, token: str | None = None) -> Iterator[Iterator[dict[str, Any]]]:
    """Every transaction the sandbox holds, read as the caller iterates inside the ``with``."""
    with SandboxAdmin(base, token=token) as admin, admin.ledger() as transactions:
        yield transactions


def advance_clock(base: str, seconds: int, *, token: str | None = None) -> dict[str, Any]:
    """Move the sandbox's clock (``--clock-control`` sandboxes only) by whole seconds; its
    new ``now``."""
    return _call(base, "POST", CLOCK, token=token, json_body={"advanceSeconds": seconds})


def driver_token(base: str, *, token: str | None = None) -> str:
    """A one-time token for the browser-test driver (it lets one page's sheet be driven)."""
    return str(_call(base, "POST", DRIVER_TOKEN, token=token)["token"])


def three_ds_challenge(base: str, account: str, *, merchant_id: str, store_id: str,
                       outcome: str, token: str | None = None) -> dict[str, Any]:
    """The sandbox's 3DS challenge for a Card account, passed (``success``) or failed."""
    data = _call(base, "POST", THREE_DS_CHALLENGE, token=token, json_body={
        "transactionAccountId": account, "merchantId": merchant_id, "storeId": store_id,
        "outcome": outcome})
    return {"transactionAccountId": account,
            **{k: data.get(k) for k in ("threeDSServerTransId", "authenticationValue", "eci",
                                        "transStatus")}}


def failure_line(exc: WalletctlError, base: str) -> str:
    """One line for a failed admin call naming its request (what the pytest plugin raises)."""
    if isinstance(exc, SandboxUnreachable):
        return f"{exc.request}: cannot reach the sandbox at {base} ({exc.cause})"
    if isinstance(exc, SandboxRefused):
        return f"{exc.request}: HTTP {exc.status} {exc.detail or exc.description or ''}".strip()
    return exc.message


# -- faults ----------------------------------------------------------------------------------------

def faults(base: str, changes: dict[str, Any] | None = None, *, clear: bool = False,
           token: str | None = None) -> dict[str, Any]:
    """The sandbox's faults after ``changes`` (on top of the current ones, or of none with
    ``clear``); no change and no clear only reads them."""
    with SandboxAdmin(base, token=token) as admin:
        if not changes and not clear:
            return admin.call("GET", FAULTS)
        merged = {} if clear else admin.call("GET", FAULTS)
        merged.update(changes or {})
        return admin.call("POST", FAULTS, json_body=merged)


# -- seed ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeedPlan:
    """``sandbox seed``'s options, checked by :func:`seed`."""

    count: int
    kind: str  # sale | preauth
    currency: str
    merchant_id: str | None
    store_id: str | None
    amount: str  # 12.50 (every one) or 5.00-50.00 (a range)
    pattern: str  # str.format pattern with {n} (and optionally {run})
    random_seed: int | None = None
    run: str = field(default_factory=lambda: secrets.token_hex(3))  # {run}: new on each run


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


def _amounts(low_major: Decimal, high_major: Decimal, currency: str,
             random_seed: int | None) -> Iterator[Decimal]:
    """Amounts in [low, high]; a range never ends in a magic value (01-05 minor units)."""
    exp = exponent(currency)
    low = int(low_major.scaleb(exp))
    high = int(high_major.scaleb(exp))
    rng = random.Random(random_seed)
    plain = [m for m in range(low, min(high, low + 200) + 1) if not 1 <= m % 100 <= 5]
    if low == high:
        while True:
            yield low_major
    if not plain:
        raise UsageError("--amount: the range holds only magic amounts (ending in 01-05)")
    while True:
        minor = rng.randint(low, high)
        if 1 <= minor % 100 <= 5:
            minor = minor + 5 if minor + 5 <= high else minor - 5
            if 1 <= minor % 100 <= 5 or minor < low:
                minor = rng.choice(plain)
        yield Decimal(minor).scaleb(-exp)


def seed(base: str, plan: SeedPlan, target: str, *, token: str | None,
         stdout: TextIO) -> dict[str, Any]:
    """Create ``plan.count`` approved transactions and write their ``ref,amount,currency`` CSV
    (the input of --batch) to the file ``target`` (``-``: ``stdout``, the command's data
    stream, which the caller owns); the run's record."""
    from walletctl.models.money import check_currency

    if plan.kind not in ("preauth", "sale"):
        raise UsageError("--kind: must be preauth or sale")
    check_pattern(plan.pattern)
    if not plan.merchant_id or not plan.store_id:
        raise UsageError("--merchant-id and --store-id: required with --url (or select a "
                         "profile instead of --url)")
    try:
        currency = check_currency(plan.currency.upper())
    except ValueError as exc:
        raise UsageError(f"--currency: {exc}") from None
    amounts = _amounts(*parse_amounts(plan.amount, currency), currency, plan.random_seed)
    rows = [(plan.pattern.format(n=n, run=plan.run), next(amounts))
            for n in range(1, plan.count + 1)]
    if len({ref for ref, _ in rows}) != len(rows):
        raise UsageError("--ref: the pattern gives the same reference twice (use {n})")
    fh = stdout if target == "-" else _open(target)
    try:
        with SandboxAdmin(base, token=token) as admin:
            for start in range(0, len(rows), SEED_CHUNK):
                chunk = rows[start:start + SEED_CHUNK]
                admin.call("POST", SEED, json_body={
                    "merchantId": plan.merchant_id, "storeId": plan.store_id,
                    "currency": currency, "kind": plan.kind,
                    "transactions": [{"reference": r, "amount": f"{a:f}"} for r, a in chunk],
                })
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("ref", "amount", "currency"))
        writer.writerows((ref, f"{amount:f}", currency) for ref, amount in rows)
    finally:
        if fh is not stdout:
            fh.close()
    total = sum((a for _, a in rows), Decimal(0))
    return {"created": len(rows), "kind": plan.kind, "currency": currency,
            "total": f"{total:f}", "first": rows[0][0], "last": rows[-1][0], "csv": target,
            "url": base}


def _open(target: str) -> Any:
    """The CSV file, opened before anything is created in the sandbox."""
    try:
        return Path(target).open("w", encoding="utf-8", newline="")
    except OSError as exc:
        raise UsageError(f"--csv {target}: cannot write it ({exc.strerror or exc})") from None


def default_sandbox_db(profile_name: str) -> Path:
    """The ledger of ``sandbox serve --write-profile NAME`` without --db: a SQLite file in the
    user's state directory (``$XDG_STATE_HOME/walletctl/sandbox/NAME.sqlite3``), so the
    profile's lookups find what earlier runs made after a restart; a directory that cannot be
    made is a UsageError naming it and --db."""
    import platformdirs

    from walletctl.config.profile import valid_profile_name

    if not valid_profile_name(profile_name):
        raise UsageError(f"--write-profile {profile_name!r}: use letters, digits, '-' and '_'")
    folder = Path(platformdirs.user_state_dir("walletctl", appauthor=False)) / "sandbox"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise UsageError(f"cannot keep the sandbox's ledger in {folder}: "
                         f"{exc.strerror or type(exc).__name__}",
                         hint="pass --db FILE (or set XDG_STATE_HOME)") from None
    return folder / f"{profile_name}.sqlite3"
