"""Fixtures for the history tests: a real-port sandbox, a fault proxy in front of it, and the
CLI run in-process (a real subprocess where the process is the point) with its own history
file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli_runner import run_walletctl
from walletctl.history.store import Completion, Intent
from walletctl.models.base import loads

# Distinctive values: any appearance in the history is a leak, not a coincidence.
API_KEY = "tk-HIST-secret-4Rb8Zq1Yw6"
KEY_ENV = "WALLETCTL_TEST_HISTORY_KEY"
SRC = str(Path(__file__).resolve().parents[2] / "src")


class FaultProxy:
    """An HTTP proxy to the sandbox. ``mode`` applies to POSTs (money moves) only:

    ``pass``        forward and answer;
    ``drop-after``  forward (the sandbox commits), then close without answering;
    ``drop-before`` close without forwarding (nothing applied);
    ``hold-after``  forward, set ``forwarded``, then keep the connection open, unanswered;
    ``hold-before`` set ``received`` and hold the request until ``release``, then forward it
                    (applied late, as by a slow gateway) and close without answering.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "pass"
        self.forwarded = threading.Event()
        self.received = threading.Event()
        self.release = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, body: bytes | None) -> httpx.Response:
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                return httpx.request(self.command, proxy.upstream + self.path, headers=headers,
                                     content=body, timeout=30)

            def _answer(self, response: httpx.Response) -> None:
                self.send_response(response.status_code)
                for k, v in response.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "content-encoding", "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            def do_GET(self) -> None:
                self._answer(self._forward(None))

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                mode = proxy.mode
                if mode == "drop-before":
                    self.close_connection = True
                    return
                if mode == "hold-before":
                    proxy.received.set()
                    proxy.release.wait(60)
                    self._forward(body)
                    self.close_connection = True
                    return
                response = self._forward(body)
                if mode == "drop-after":
                    self.close_connection = True
                    return
                if mode == "hold-after":
                    proxy.forwarded.set()
                    proxy.release.wait(60)
                    self.close_connection = True
                    return
                self._answer(response)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True, api_key=API_KEY)) as sb:
        yield sb


@pytest.fixture
def proxy(sandbox: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(sandbox.url)
    yield p
    p.close()


def profile_text(base_url: str, *, name: str = "desk", history: str = "") -> str:
    """The demo's profile (walletctl.sandbox.scenario.profile_toml) for the desk, plus a
    ``[history]`` table when given."""
    from walletctl.sandbox.scenario import profile_toml

    return profile_toml(base_url, name=name, key_env=KEY_ENV, merchant_id="M-1001",
                        store_id="S-01", user_id="ops-bot", timeout=10) + history


@dataclass
class Desk:
    """A support desk: a profiles file, a history file, and the CLI as a subprocess."""

    tmp: Path
    base_url: str
    sandbox_url: str
    history: Path
    config: Path = field(init=False)

    def __post_init__(self) -> None:
        self.config = self.tmp / "profiles.toml"
        self.write_profile()

    def write_profile(self, history: str = "", base_url: str | None = None) -> None:
        self.config.write_text(profile_text(base_url or self.base_url, history=history))
        os.chmod(self.config, 0o600)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        env.update({KEY_ENV: API_KEY, "WALLETCTL_CONFIG": str(self.config),
                    "WALLETCTL_AUDIT_LOG": str(self.history), "COLUMNS": "80",
                    "NO_COLOR": "1",
                    "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")})
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "walletctl", *args]

    def run(self, *args: str, stdin: str | None = None,
            process: bool = False) -> subprocess.CompletedProcess[str]:
        """``walletctl ARGS`` in this process (tests/cli_runner.py); ``process=True``: as a
        real ``python -m walletctl`` (:meth:`argv` for a Popen of one's own)."""
        if process:
            proc = subprocess.run(self.argv(*args), env=self.env(), capture_output=True,
                                  text=True, input=stdin, timeout=60, check=False)
        else:
            proc = run_walletctl(args, input=stdin, env=self.env())
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def ok(self, *args: str) -> str:
        proc = self.run(*args)
        assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    def entries(self, *filters: str) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = loads(self.ok("-o", "json", "history", *filters))
        return data

    def preauth(self, ref: str, amount: str = "100.00", *, via_cli: bool = False) -> None:
        """An approved pre-authorisation: checkout (through walletctl when ``via_cli``, else
        straight to the sandbox), then approved as the customer would."""
        if via_cli:
            self.ok("-o", "json", "checkout", "--ref", ref, "--amount", amount,
                    "--type", "preauth")
        else:
            from sandbox_fixtures import make_checkout_body

            body = make_checkout_body(ref, str(int(Decimal(amount) * 100)),
                                      type="ecom.preauthorization")
            r = httpx.post(f"{self.sandbox_url}/api/v5/checkout", json=body, timeout=10,
                           headers={"Authorization": f"PublicApiKey {API_KEY}"})
            assert r.status_code == 200, r.text
        r = httpx.post(f"{self.sandbox_url}/_sandbox/checkouts/{ref}/approve", timeout=10)
        assert r.status_code == 200, r.text

    def ledger(self, invoice: str) -> list[dict[str, Any]]:
        r = httpx.get(self.sandbox_url + "/_sandbox/ledger", timeout=10)
        rows: list[dict[str, Any]] = loads(r.content)["transactions"]
        return [t for t in rows if t["invoiceReference"] == invoice or t["reference"] == invoice]

    def events(self) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.history) as db:
            return list(db.execute("SELECT * FROM events ORDER BY seq"))


@pytest.fixture
def desk(tmp_path: Path, proxy: FaultProxy, sandbox: Any) -> Desk:
    return Desk(tmp=tmp_path, base_url=proxy.url, sandbox_url=sandbox.url,
                history=tmp_path / "audit" / "history.sqlite3")


def expect(proc: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    """Exit ``code`` with ``text`` in a short stderr (one error line, maybe a hint)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert text in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) <= 2, proc.stderr


def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def refund_intent(i: int, **kw: object) -> Intent:
    """Entry ``i``'s refund of ``i``.50 EUR on ORD-i, as ana at desk-1 writes it (``kw``
    overrides a field)."""
    base: dict[str, object] = dict(
        time=f"2026-11-{i:02d}T10:00:00.000Z", os_user="ana", host="desk-1", profile="desk",
        base_url="https://gw.example", operation="refund", original_ref=f"ORD-{i}",
        new_ref=f"ORD-{i}-REF1", amount=f"{i}.50", currency="EUR", merchant_id="M-1",
        store_id="S-1")
    base.update(kw)
    return Intent(**base)  # type: ignore[arg-type]


def record_refunds(path: Path, first: int, last: int) -> None:
    """Entries ``first`` to ``last`` (:func:`refund_intent`), each approved, in the SQLite
    history at ``path``."""
    from walletctl.history.sqlite import SqliteHistory

    with SqliteHistory(path) as store:
        for i in range(first, last + 1):
            entry = store.begin(refund_intent(i))
            store.complete(entry, Completion(time=f"2026-11-{i:02d}T10:00:01.000Z",
                                             outcome="approved", http_status=200))


def history_cli(path: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``walletctl ARGS`` in process on the history file ``path``, no other WALLETCTL_*
    variable set; never a traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(WALLETCTL_AUDIT_LOG=str(path), COLUMNS=str(columns), NO_COLOR="1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = run_walletctl(args, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def rechain(path: Path, *, drop_tree: bool = True) -> None:
    """What the file's owner can do: recompute every event's hash with walletctl's own
    function; ``drop_tree``: drop the Merkle tree too (it is filled again from the events at
    the next open)."""
    from walletctl.history.chain import ALL, GENESIS, event_hash

    with sqlite3.connect(path) as db:
        rows = db.execute(f"SELECT seq, {', '.join(ALL)} FROM events ORDER BY seq").fetchall()  # noqa: S608
        prev = GENESIS
        for seq, *values in rows:
            digest = event_hash(prev, seq, values)
            db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?",
                       (prev, digest, seq))
            prev = digest
        if drop_tree:
            db.execute("DROP TABLE merkle_nodes")
