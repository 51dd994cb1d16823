"""Recordings of gateway traffic: one JSON file per exchange (request, answer, timings, the
violations found), secrets and card data masked by :mod:`walletctl.masking` before anything
reaches the disk; and reading a recording back, in order (``sandbox drift``, ``serve
--replay``). docs/sandbox.md, "Is the sandbox the gateway?"."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from walletctl.masking import MASK, Masker, is_secret_key, mask_headers

FORMAT: Final = "walletctl-recording/1"
SUFFIX: Final = ".exchange.json"
MAX_FILES: Final = 1_000_000  # exchanges per recording directory


class RecordingError(ValueError):
    """A recording that cannot be read: names the file and the rule."""


@dataclass
class Message:
    """One side of an exchange as recorded (body: masked text, exactly as sent otherwise)."""

    headers: dict[str, str]
    body: str
    method: str = ""
    path: str = ""
    query: str = ""
    status: int = 0

    def json(self) -> Any:
        """The body as JSON (numbers as Decimal, so their spelling is kept), None if not."""
        from decimal import Decimal

        if not self.body.strip():
            return None
        try:
            return json.loads(self.body, parse_float=Decimal)
        except ValueError:
            return None

    def header(self, name: str) -> str:
        low = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == low), "")


@dataclass
class Recorded:
    seq: int
    request: Message
    answer: Message
    upstream_ms: float
    total_ms: float
    violations: list[dict[str, str]] = field(default_factory=list)

    @property
    def route(self) -> str:
        return f"{self.request.method} {self.request.path}"


def _credential(headers: Mapping[str, str]) -> list[str]:
    """The secret parts of the auth headers (remembered so they are masked anywhere)."""
    found = []
    for name, value in headers.items():
        if name.lower() in ("authorization", "proxy-authorization"):
            scheme, _, cred = value.partition(" ")
            found.append(cred or scheme)
            if scheme.lower() == "basic" and cred:
                import base64
                import binascii

                try:
                    pair = base64.b64decode(cred, validate=True).decode("utf-8", "replace")
                except (binascii.Error, ValueError):
                    continue
                found += [part for part in pair.split(":", 1) if part]
    return found


def _structured_secret(data: Any) -> bool:
    """True when a secret key holds an object or array (text masking would leave its
    inside)."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if is_secret_key(key) and isinstance(value, dict | list):
                    return True
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return False


def mask_body(masker: Masker, raw: bytes) -> str:
    """A body as text with every known secret, secret-keyed value and card number masked;
    the rest exactly as sent (number spelling, key order, spaces)."""
    text = raw.decode("utf-8", "replace")
    masked = masker.text(text)
    try:
        data = json.loads(masked)
    except ValueError:
        return masked
    if _structured_secret(data):
        return json.dumps(masker.data(data), separators=(",", ":"))
    return masked


def masker_for(headers: Iterable[Mapping[str, str]], bodies: Iterable[bytes]) -> Masker:
    """A masker knowing the exchange's credentials and every value under a secret key."""
    masker = Masker()
    for group in headers:
        for secret in _credential(group):
            masker.add(secret)
    for raw in bodies:
        try:
            masker.add_from(json.loads(raw))
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
    return masker


class Recorder:
    """Writes each exchange as ``DIR/NNNNNN.exchange.json`` (atomically: a reader never sees
    half a file)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        existing = [p for p in directory.iterdir() if p.name.endswith(SUFFIX)]
        if existing:
            raise RecordingError(f"--record {directory}: already holds a recording "
                                 f"({len(existing)} exchanges); choose an empty directory")
        self.seq = 0

    def next_seq(self) -> int:
        """The number of the next exchange (taken in arrival order, written in any)."""
        self.seq += 1
        return self.seq

    def write(self, *, method: str, path: str, query: str,
              request_headers: Mapping[str, str], request_body: bytes, status: int,
              answer_headers: Mapping[str, str], answer_body: bytes, upstream_ms: float,
              total_ms: float, violations: list[dict[str, str]], seq: int = 0) -> Path:
        """Write one exchange (thread-safe given ``seq`` from :meth:`next_seq`)."""
        seq = seq or self.next_seq()
        masker = masker_for([request_headers, answer_headers], [request_body, answer_body])
        doc = {
            "format": FORMAT,
            "seq": seq,
            "request": {"method": method, "path": masker.text(path),
                        "query": masker.text(query),
                        "headers": mask_headers(dict(request_headers)),
                        "body": mask_body(masker, request_body)},
            "answer": {"status": status, "headers": mask_headers(dict(answer_headers)),
                       "body": mask_body(masker, answer_body)},
            "timings": {"upstreamMs": round(upstream_ms, 3), "totalMs": round(total_ms, 3)},
            "violations": [{k: masker.text(v) for k, v in item.items()}
                           for item in violations],
        }
        target = self.directory / f"{seq:06d}{SUFFIX}"
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        return target


def _message(doc: Any, where: str, *, answer: bool) -> Message:
    if not isinstance(doc, dict):
        raise RecordingError(f"{where}: must be a JSON object")
    headers = doc.get("headers") or {}
    body = doc.get("body", "")
    if not isinstance(headers, dict) or not isinstance(body, str):
        raise RecordingError(f"{where}: headers must be an object and body a string")
    if answer:
        status = doc.get("status")
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise RecordingError(f"{where}.status: must be an HTTP status")
        return Message({str(k): str(v) for k, v in headers.items()}, body, status=status)
    method, path = doc.get("method"), doc.get("path")
    if not isinstance(method, str) or not isinstance(path, str) or not path.startswith("/"):
        raise RecordingError(f"{where}: method and path (from /) are required")
    return Message({str(k): str(v) for k, v in headers.items()}, body, method=method,
                   path=path, query=str(doc.get("query") or ""))


def read_recording(directory: Path) -> list[Recorded]:
    """Every exchange of a recording, in order; RecordingError naming the file and rule."""
    if not directory.is_dir():
        raise RecordingError(f"{directory}: is not a directory")
    files = sorted(p for p in directory.iterdir() if p.name.endswith(SUFFIX))
    if not files:
        raise RecordingError(f"{directory}: holds no recorded exchange (*{SUFFIX})")
    if len(files) > MAX_FILES:
        raise RecordingError(f"{directory}: more than {MAX_FILES} exchanges")
    out: list[Recorded] = []
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise RecordingError(f"{path.name}: not a readable JSON file ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise RecordingError(f"{path.name}: format must be {FORMAT!r}")
        timings = doc.get("timings") or {}
        out.append(Recorded(
            seq=int(doc.get("seq") or len(out) + 1),
            request=_message(doc.get("request"), f"{path.name}: request", answer=False),
            answer=_message(doc.get("answer"), f"{path.name}: answer", answer=True),
            upstream_ms=float(timings.get("upstreamMs") or 0),
            total_ms=float(timings.get("totalMs") or 0),
            violations=list(doc.get("violations") or []),
        ))
    return out


def is_masked(text: str) -> bool:
    return MASK in text or "****(" in text
