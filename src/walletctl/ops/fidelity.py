"""Is the sandbox the gateway? ``sandbox proxy`` (check and record live traffic), ``sandbox
drift`` (replay a recording against a fresh sandbox, compare) and ``sandbox serve --replay``
(answer from a recording). docs/sandbox.md, "Is the sandbox the gateway?"."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from walletctl.errors import UsageError

if TYPE_CHECKING:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.drift import DriftReport

LOG_FORMATS = ("text", "json")


def check_upstream(url: str) -> str:
    """``--upstream``: an http(s) base URL, without a query or fragment."""
    text = url.strip()
    if not (len(text) <= 2048 and text.isprintable()
            and re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", text)):
        raise UsageError(f"--upstream {url[:80]!r}: must be an http(s) base URL such as "
                         "https://test-gateway.example or http://127.0.0.1:8765")
    return text.rstrip("/")


def run_proxy(upstream: str, *, host: str, port: int, amount_format: str,
              ready_file: Path | None, record: Path | None, log_format: str,
              timeout: float, max_connections: int) -> None:
    """Serve the validation proxy in the foreground until SIGINT/SIGTERM."""
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.hosting import serve_app
    from walletctl.sandbox.proxy import ProxyApp, ViolationLog
    from walletctl.sandbox.recording import Recorder, RecordingError

    base = check_upstream(upstream)
    if amount_format not in ("minor", "decimal"):
        raise UsageError("--amount-format: must be minor or decimal")
    if log_format not in LOG_FORMATS:
        raise UsageError("--log-format: must be text or json")
    try:
        config = SandboxConfig(host=host, quiet=True, max_connections=max_connections)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    recorder = None
    if record is not None:
        try:
            recorder = Recorder(record)
        except RecordingError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"--record {record}: cannot use this directory "
                             f"({exc.strerror or exc})") from None
    app = ProxyApp(base, amount_format=amount_format,  # type: ignore[arg-type]
                   log=ViolationLog(log_format), recorder=recorder, timeout=timeout,
                   max_connections=max_connections or 100)
    details = f"upstream {base}, amounts {amount_format}" + (
        f", recording to {record}" if record is not None else "")
    try:
        serve_app(app, config, host, port, name="proxy", details=details,
                  ready_file=ready_file)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def drift(directory: Path, *, amount_format: str = "minor", latency_ms: int = 0) -> DriftReport:
    """Replay a recording against a fresh embedded sandbox with these settings; compare."""
    from walletctl.sandbox.drift import compare_recording
    from walletctl.sandbox.recording import RecordingError

    if amount_format not in ("minor", "decimal"):
        raise UsageError("--amount-format: must be minor or decimal")
    try:
        return compare_recording(directory, amount_format=amount_format,  # type: ignore[arg-type]
                                 latency_ms=latency_ms)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def serve_replay(directory: Path, *, host: str, port: int, ready_file: Path | None,
                 config: SandboxConfig, on_listen: Callable[[str], None] | None = None,
                 out: TextIO | None = None) -> None:
    """Serve a recording's answers in the foreground until SIGINT/SIGTERM."""
    from walletctl.sandbox.hosting import serve_app
    from walletctl.sandbox.playback import PlaybackApp
    from walletctl.sandbox.recording import RecordingError, read_recording

    try:
        exchanges = read_recording(directory)
    except RecordingError as exc:
        raise UsageError(f"--replay: {exc}") from None
    app = PlaybackApp(exchanges)
    try:
        serve_app(app, config, host, port, name="replay", ready_file=ready_file,
                  details=f"{len(exchanges)} recorded exchanges from {directory}",
                  on_listen=on_listen, out=out)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
