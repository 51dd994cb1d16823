"""What the client does to every answer before anyone else sees it.

* **Deadline**: one overall limit per request (connect, send, headers and the whole body),
  :func:`overall_deadline` of the profile's timeout, so a gateway dripping one byte a second
  cannot hold a command. The sync client arms ``SIGALRM`` (main thread only) so even a
  slow header phase is cut; the async client uses ``asyncio.timeout``.
* **Size caps**: at most :data:`MAX_WIRE_BYTES` on the wire and :data:`MAX_BODY_BYTES` once
  decoded (gzip/deflate are decoded here, in bounded steps: a gzip bomb never inflates past
  the cap). Other content encodings are refused.
* **Sanitising**: every string of a JSON answer (keys too) has its control and escape
  characters (C0, DEL, C1, bidi overrides, line/paragraph separators) shown escaped
  (``\\x1b``), and every credential the request carried replaced by its fingerprint. Done
  once, here, so tables, CSV, JSON, errors and hints downstream only ever see clean text.
"""

from __future__ import annotations

import base64
import re
import signal
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from walletctl.masking import is_secret_key, mask_known

MAX_WIRE_BYTES = 4 * 1024 * 1024  # compressed (as received)
MAX_BODY_BYTES = 16 * 1024 * 1024  # decoded
MAX_TEXT = 4096  # one gateway string after escaping: a 2,048-char URL fits, a 1 MB line not

# Control characters, DEL, C1, bidi embeddings/overrides/isolates, LS/PS, BOM/zero-width.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_BREAKS = re.compile(r"[\t\n\r]+")  # line breaks and tabs read as one space


def overall_deadline(timeout: float) -> float:
    """Seconds one request may take from connect to its last byte: twice the timeout."""
    return 2.0 * timeout


class DeadlineExceeded(BaseException):
    """The request's overall deadline passed (raised from the SIGALRM handler)."""


class BodyTooLarge(Exception):
    pass


class BadEncoding(Exception):
    pass


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise :class:`DeadlineExceeded` in this (main) thread after ``seconds``.

    Off the main thread (where signals cannot be delivered) this does nothing; the body
    reader's own deadline check still applies between chunks.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return
    armed = [True]

    def fire(_signum: int, frame: Any) -> None:
        if not armed[0]:
            return
        if _in_import(frame):  # never inside an import (a half-imported module): just after
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            return
        armed[0] = False
        raise DeadlineExceeded

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)


def _in_import(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class BodyReader:
    """Collects raw (possibly compressed) chunks within the caps and the deadline."""

    def __init__(self, content_encoding: str | None, deadline: float | None = None) -> None:
        encoding = (content_encoding or "identity").strip().lower()
        self._decoder: Any = None
        self._deflate = False
        if encoding in ("gzip", "x-gzip"):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._decoder = zlib.decompressobj()
            self._deflate = True
        elif encoding not in ("identity", ""):
            raise BadEncoding(f"unsupported Content-Encoding {clean_text(encoding)[:40]!r}")
        self._deadline = deadline
        self._wire = 0
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise DeadlineExceeded
        self._wire += len(chunk)
        if self._wire > MAX_WIRE_BYTES:
            raise BodyTooLarge(f"answer larger than {MAX_WIRE_BYTES // 1024 // 1024} MiB")
        if self._decoder is None:
            self._add(chunk)
            return
        data = chunk
        while data:
            try:
                out = self._decoder.decompress(data, MAX_BODY_BYTES - self._size + 1)
            except zlib.error:
                if self._deflate and self._wire == len(chunk) and not self._parts:
                    self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                    self._deflate = False
                    continue
                raise BadEncoding("the compressed answer is corrupt") from None
            self._add(out)
            data = self._decoder.unconsumed_tail

    def _add(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > MAX_BODY_BYTES:
            raise BodyTooLarge(
                f"answer inflates past {MAX_BODY_BYTES // 1024 // 1024} MiB (refused)"
            )
        if data:
            self._parts.append(data)

    def finish(self) -> bytes:
        if self._decoder is not None:
            try:
                self._add(self._decoder.flush(MAX_BODY_BYTES - self._size + 1))
            except zlib.error:
                raise BadEncoding("the compressed answer is corrupt") from None
        return b"".join(self._parts)


# -- sanitising --------------------------------------------------------------------------------


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Gateway text made safe for a terminal and free of the request's credentials."""
    text = _UNSAFE.sub(_escape, _BREAKS.sub(" ", mask_known(text, secrets)))
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - 15] + "...(truncated)"
    return text


def clean(obj: Any, secrets: tuple[str, ...] = (), *, sensitive: bool = False) -> Any:
    """A copy of a JSON value with every string (and key) passed through :func:`clean_text`.

    Values under secret keys (:data:`walletctl.masking.SECRET_KEYS`: ``apiKey``,
    ``encryptionKey``...) keep the credentials they legitimately carry, whole (the models
    hold them as ``SecretStr``, masked on output).
    """
    if isinstance(obj, str):
        if sensitive:
            return _UNSAFE.sub(_escape, obj)
        return clean_text(obj, secrets)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            name = clean_text(key, secrets) if isinstance(key, str) else key
            out[name] = clean(
                value, secrets, sensitive=sensitive or is_secret_key(key)
            )
        return out
    if isinstance(obj, list):
        return [clean(v, secrets, sensitive=sensitive) for v in obj]
    return obj


def credential_parts(header_value: str) -> tuple[str, ...]:
    """The secrets inside one auth header value: itself, the credential, a Basic password."""
    found = [header_value]
    scheme, _, credential = header_value.partition(" ")
    credential = credential.strip()
    if credential:
        found.append(credential)
        if scheme.lower() == "basic":
            try:
                user_pass = base64.b64decode(credential, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                user_pass = ""
            password = user_pass.partition(":")[2]
            if password:
                found.append(password)
    return tuple(found)
