"""``sandbox drift``: a recording's requests replayed, in order, against a fresh embedded
sandbox, and the answers compared field by field (status, states, amounts and their format,
references, error codes, timing). Each difference names the sandbox setting that would
align it where one exists, else the design decision it touches (docs/design.md, the table
of how the spec's unshown parts are settled)."""

from __future__ import annotations

import base64
import statistics
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import httpx

from walletctl.models.money import AmountFormat
from walletctl.models.sandbox_values import DEFAULT_API_KEY
from walletctl.sandbox.config import FaultConfig, SandboxConfig
from walletctl.sandbox.conformance import route_of
from walletctl.sandbox.recording import Recorded, read_recording

# the routes replayed (others, e.g. the browser wallet's masked tokens, cannot be)
_REPLAYED: Final = ("/api/v5/checkout", "/api/v5/apmTransactions", "/api/v5/publicKeys",
                    "/_sandbox/checkouts/", "/pay/")
_SENT_HEADERS: Final = frozenset({"content-type", "accept"})
# fields compared in JSON answers (elsewhere: generated ids, times, payer data, links)
_COMPARED: Final = ("state", "providerStateCode", "currencyCode", "transactionAmount",
                    "amount", "clientSystemTransactionId", "clientSystemInvoiceId", "type",
                    "code", "description", "reference")
_PRESENCE: Final = ("redirectUrl", "apiKey", "encryptionKey", "encryptionKeyId", "expiresAt",
                    "id")
TIMING_GAP_MS: Final = 50.0  # a median gap above this (and twice the faster) is reported
_AMOUNT_KEYS: Final = frozenset({"transactionamount", "amount"})
DECISIONS: Final = {
    "state": "design: States", "providerStateCode": "design: States",
    "code": "design: Errors", "description": "design: Errors", "(status)": "design: Errors",
    "clientSystemTransactionId": "design: Lookup (references)",
    "clientSystemInvoiceId": "design: Lookup (references)",
    "reference": "design: Lookup (references)", "type": "design: Authorization",
    "(records)": "design: Lookup", "currencyCode": "design: amount format",
}


@dataclass(frozen=True)
class Difference:
    seq: int
    route: str
    field: str
    recorded: str
    sandbox: str
    setting: str | None = None
    decision: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "route": self.route, "field": self.field,
                "recorded": self.recorded, "sandbox": self.sandbox,
                "setting": self.setting, "decision": self.decision}


@dataclass
class DriftReport:
    directory: str
    settings_used: dict[str, str]
    replayed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    recorded_ms: float | None = None
    sandbox_ms: float | None = None

    @property
    def settings(self) -> list[str]:
        """The sandbox settings that would align the differences, once each."""
        return list(dict.fromkeys(d.setting for d in self.differences if d.setting))

    @property
    def exit_code(self) -> int:
        from walletctl.constants import ExitCode

        return int(ExitCode.MISMATCH if self.differences else ExitCode.OK)

    def to_json(self) -> dict[str, Any]:
        return {"recording": self.directory, "sandbox": self.settings_used,
                "replayed": self.replayed, "skipped": self.skipped,
                "agree": not self.differences, "settings": self.settings,
                "medianMs": {"recorded": self.recorded_ms, "sandbox": self.sandbox_ms},
                "differences": [d.to_json() for d in self.differences]}


def _format_of(value: Any) -> str | None:
    """How an amount is written: ``decimal`` (a point), ``minor`` (digits only)."""
    if isinstance(value, bool) or value is None:
        return None
    text = format(value, "f") if isinstance(value, Decimal) else str(value)
    return "decimal" if "." in text else "minor"


def _show(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return f'"{value}"' if value else '""'
    return "absent" if value is None else str(value)


class _Replay:
    def __init__(self, report: DriftReport, fmt: AmountFormat) -> None:
        self.report = report
        self.fmt = fmt
        self.tokens: dict[str, str] = {}  # recorded hosted-page token -> the sandbox's
        self.traffic_formats: set[str] = set()

    def differ(self, ex: Recorded, name: str, recorded: Any, sandbox: Any,
               setting: str | None = None) -> None:
        decision = None if setting else DECISIONS.get(name.rsplit(".", 1)[-1].split("]")[-1],
                                                      "design: the spec's unshown parts")
        self.report.differences.append(Difference(ex.seq, ex.route, name, _show(recorded),
                                                  _show(sandbox), setting, decision))

    def amount_setting(self) -> str | None:
        """``--amount-format X`` when the recorded traffic writes amounts as X, not as this
        sandbox reads them."""
        other = self.traffic_formats - {self.fmt}
        return f"--amount-format {other.pop()}" if len(other) == 1 else None

    def compare(self, ex: Recorded, status: int, answer: Any) -> None:
        recorded = ex.answer.json()
        if ex.answer.status != status:
            setting = self.amount_setting()
            self.differ(ex, "(status)", ex.answer.status, status, setting)
            if recorded is not None and answer is not None and ex.answer.status >= 400:
                self.walk(ex, "", recorded, answer)
            return
        if recorded is None or answer is None:
            return
        self.walk(ex, "", recorded, answer)

    def walk(self, ex: Recorded, path: str, recorded: Any, answer: Any) -> None:
        if isinstance(recorded, list) and isinstance(answer, list):
            if len(recorded) != len(answer):
                self.differ(ex, path + "(records)", len(recorded), len(answer))
            for i, (a, b) in enumerate(zip(recorded, answer, strict=False)):
                self.walk(ex, f"{path}[{i}].", a, b)
            return
        if not (isinstance(recorded, dict) and isinstance(answer, dict)):
            return
        for key in _COMPARED:
            a, b = recorded.get(key), answer.get(key)
            if key.lower() in _AMOUNT_KEYS and a is not None and b is not None:
                fa, fb = _format_of(a), _format_of(b)
                if fa != fb:
                    self.differ(ex, path + key, a, b, f"--amount-format {fa}")
                    continue
            if a != b and not (isinstance(a, dict) or isinstance(b, dict)):
                self.differ(ex, path + key, a, b)
        for key in _PRESENCE:
            if (key in recorded) != (key in answer):
                self.differ(ex, path + key, "present" if key in recorded else None,
                            "present" if key in answer else None)
        for key in ("details", "record", "apmDetails"):
            if isinstance(recorded.get(key), dict) and isinstance(answer.get(key), dict):
                if key == "details":  # the error message's wording is not compared
                    continue
                self.walk(ex, f"{path}{key}.", recorded[key], answer[key])


def _request(ex: Recorded, config: SandboxConfig, tokens: dict[str, str]) -> tuple[
        str, dict[str, str], bytes]:
    """The path (with query), headers and body to send the sandbox for a recorded request."""
    req = ex.request
    headers = {k: v for k, v in req.headers.items() if k.lower() in _SENT_HEADERS}
    auth = req.header("authorization")
    if auth.lower().startswith("basic"):
        pair = base64.b64encode(f"drift:{config.service_secret}".encode()).decode()
        headers["Authorization"] = f"Basic {pair}"
    elif auth:
        headers["Authorization"] = f"{auth.split(' ', 1)[0]} {config.api_key}"
    path = req.path
    if path.startswith("/pay/"):
        token = path[len("/pay/"):]
        path = "/pay/" + tokens.get(token, token)
    target = path + (f"?{req.query}" if req.query else "")
    return target, headers, req.body.encode("utf-8")


def _amount_formats(ex: Recorded) -> set[str]:
    data = ex.request.json()
    found: set[str] = set()
    if isinstance(data, dict):
        value = data.get("amount")
        fmt = _format_of(value)
        if fmt is not None and not isinstance(value, int):
            found.add(fmt)
        elif isinstance(value, int):
            found.add("minor")
    return found


def compare_recording(directory: Path, *, amount_format: AmountFormat = "minor",
                      latency_ms: int = 0) -> DriftReport:
    """Replay ``directory``'s recording against a fresh embedded sandbox with these settings
    (RecordingError for an unreadable recording)."""
    from walletctl.sandbox.server import EmbeddedSandbox

    exchanges = read_recording(directory)
    config = SandboxConfig(amount_format=amount_format, api_key=DEFAULT_API_KEY, quiet=True,
                           faults=FaultConfig(latency_ms=latency_ms))
    used = {"amount-format": amount_format, "latency": f"{latency_ms} ms"}
    report = DriftReport(str(directory), used)
    replay = _Replay(report, amount_format)
    recorded_ms: list[float] = []
    sandbox_ms: list[float] = []
    broken: set[str] = set()  # references of exchanges skipped or answered differently
    with EmbeddedSandbox(config) as sandbox, httpx.Client(
            base_url=sandbox.url, timeout=30, trust_env=False) as client:
        for ex in exchanges:
            refs = _references(ex)
            if not ex.request.path.startswith(_REPLAYED) or refs & broken:
                why = _route_name(ex) if not refs & broken else _DEPENDS
                report.skipped[why] = report.skipped.get(why, 0) + 1
                broken |= refs
                continue
            replay.traffic_formats |= _amount_formats(ex)
            target, headers, body = _request(ex, config, replay.tokens)
            started = time.perf_counter()
            answer = client.request(ex.request.method, target, headers=headers,
                                    content=body or None)
            elapsed = (time.perf_counter() - started) * 1000
            if ex.request.path.startswith("/api/v5"):
                recorded_ms.append(ex.upstream_ms)
                sandbox_ms.append(elapsed)
            report.replayed += 1
            data = _json(answer)
            _learn_token(ex, data, replay.tokens)
            replay.compare(ex, answer.status_code, data)
            if answer.status_code != ex.answer.status:
                broken |= refs  # what follows on these references would differ in turn
    if recorded_ms:
        report.recorded_ms = round(statistics.median(recorded_ms), 1)
        report.sandbox_ms = round(statistics.median(sandbox_ms), 1)
        _timing(report, latency_ms)
    return report


_DEPENDS: Final = "(depends on an earlier exchange skipped or answered differently)"
_REF_KEYS: Final = ("clientSystemTransactionId", "clientSystemInvoiceId")


def _references(ex: Recorded) -> set[str]:
    """The order references a recorded request names (body, query, admin route path)."""
    from urllib.parse import parse_qs

    refs: set[str] = set()
    data = ex.request.json()
    if isinstance(data, dict):
        refs |= {v for k in _REF_KEYS if isinstance(v := data.get(k), str)}
    refs |= set(parse_qs(ex.request.query).get("clientSystemTransactionId", []))
    if ex.request.path.startswith("/_sandbox/checkouts/"):
        refs.add(ex.request.path[len("/_sandbox/checkouts/"):].rsplit("/", 1)[0])
    return refs


def _route_name(ex: Recorded) -> str:
    """The route of a request (``GET /api/v5/paymentAccounts/{account_id}``, not its id)."""
    route = route_of(ex.request.method, ex.request.path)
    return route.name if route is not None else ex.route


def _json(answer: httpx.Response) -> Any:
    import json

    if "json" not in answer.headers.get("content-type", ""):
        return None
    try:
        return json.loads(answer.content, parse_float=Decimal)
    except ValueError:
        return None


def _learn_token(ex: Recorded, data: Any, tokens: dict[str, str]) -> None:
    """Map the recorded hosted-page link's token to the sandbox's."""
    recorded = ex.answer.json()
    if isinstance(recorded, dict) and isinstance(data, dict):
        a, b = recorded.get("redirectUrl"), data.get("redirectUrl")
        if isinstance(a, str) and isinstance(b, str) and "/pay/" in a and "/pay/" in b:
            tokens[a.rsplit("/pay/", 1)[1]] = b.rsplit("/pay/", 1)[1]


def _timing(report: DriftReport, latency_ms: int) -> None:
    """A median answer time gap larger than :data:`TIMING_GAP_MS` and twice the faster one:
    the ``--latency`` that would align it."""
    a, b = report.recorded_ms or 0.0, report.sandbox_ms or 0.0
    gap = a - b
    if abs(gap) > TIMING_GAP_MS and max(a, b) > 2 * min(a, b):
        wanted = max(0, round((latency_ms + gap) / 10.0) * 10)
        report.differences.append(Difference(
            0, "(all gateway routes)", "(median answer time)", f"{a:g} ms", f"{b:g} ms",
            f"--latency {wanted}", None))
