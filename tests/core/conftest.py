"""Fixtures for the CLI-core tests: profile files, a CLI runner, the in-process sandbox."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

# A distinctive key: any appearance of it in an output is a leak, not a coincidence.
API_KEY = "tk-CORE-secret-7Q9wX2vL5mN8"
KEY_ENV = "WALLETCTL_TEST_CORE_KEY"
REDIRECTS = {
    "success_url": "https://shop.example/ok",
    "error_url": "https://shop.example/err",
    "pending_url": "https://shop.example/pending",
    "return_url": "https://shop.example/back",
}


def write_profile(
    directory: Path,
    base_url: str,
    *,
    amount_format: str = "minor",
    currency: str | None = "EUR",
    timeout: float | None = None,
    name: str = "core",
    redirects: dict[str, str] | None = None,
) -> Path:
    """A profiles file (0600) with one profile whose key comes from :data:`KEY_ENV`."""
    lines = [
        f'default_profile = "{name}"',
        f"[profiles.{name}]",
        f'base_url = "{base_url}"',
        'merchant_id = "M-1001"',
        'store_id = "S-01"',
        'user_id = "ops-bot"',
        f'amount_format = "{amount_format}"',
    ]
    if currency:
        lines.append(f'currency = "{currency}"')
    if timeout is not None:
        lines.append(f"timeout = {timeout}")
    lines += [f"[profiles.{name}.auth]", 'scheme = "PublicApiKey"', f'key_env = "{KEY_ENV}"']
    lines.append(f"[profiles.{name}.redirects]")
    for key, value in (REDIRECTS if redirects is None else redirects).items():
        lines.append(f'{key} = "{value}"')
    path = directory / f"profiles-{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


@dataclass
class Cli:
    """Runs ``walletctl --config <file> ...`` in-process with a separate stderr."""

    config: Path

    def __call__(self, *args: str, input: str | None = None, config: bool = True) -> Result:
        from walletctl.cli.main import app

        argv = (["--config", str(self.config)] if config else []) + list(args)
        result = CliRunner().invoke(app, argv, input=input, catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(
                f"walletctl {' '.join(args)} raised {result.exception!r}\n{result.stderr}"
            ) from result.exception
        return result


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    return API_KEY


@pytest.fixture
def make_cli(tmp_path: Path, api_key: str) -> Any:
    """``make_cli(base_url, amount_format=..., ...)`` -> a :class:`Cli` on a fresh profile."""
    count = iter(range(1000))

    def make(base_url: str, **options: Any) -> Cli:
        directory = tmp_path / f"cfg{next(count)}"
        directory.mkdir()
        return Cli(write_profile(directory, base_url, **options))

    return make


class Sandbox:
    """The real sandbox app in-process; the CLI reaches it through ``ENV.transport``."""

    def __init__(self, amount_format: str = "minor") -> None:
        import warnings

        with warnings.catch_warnings():  # starlette's "install httpx2" notice
            warnings.simplefilter("ignore")
            from starlette.testclient import TestClient

        from walletctl.sandbox.app import create_app
        from walletctl.sandbox.config import SandboxConfig

        self.app = create_app(
            SandboxConfig(api_key=API_KEY, amount_format=amount_format)  # type: ignore[arg-type]
        )
        self.client = TestClient(self.app)
        self.transport: Any = self.client._transport

    def approve(self, ref: str, action: str = "approve") -> None:
        response = self.client.post(f"/_sandbox/checkouts/{ref}/{action}")
        assert response.status_code == 200, response.text

    def ledger(self) -> Any:
        return self.client.get("/_sandbox/ledger").json()

    def close(self) -> None:
        from walletctl.sandbox.app import store_of

        self.client.close()
        store_of(self.app).close()


@pytest.fixture
def sandbox(api_key: str) -> Iterator[Sandbox]:
    from walletctl.cli.state import ENV

    sb = Sandbox()
    ENV.transport = sb.transport
    ENV.stdin_isatty = False
    ENV.stdout_isatty = False
    try:
        yield sb
    finally:
        sb.close()


@pytest.fixture
def make_sandbox(api_key: str) -> Iterator[Any]:
    """``make_sandbox(amount_format)`` -> a :class:`Sandbox` wired to the CLI, closed after."""
    from walletctl.cli.state import ENV

    made: list[Sandbox] = []

    def make(amount_format: str = "minor") -> Sandbox:
        sb = Sandbox(amount_format)
        made.append(sb)
        ENV.transport = sb.transport
        return sb

    yield make
    for sb in made:
        sb.close()


@pytest.fixture
def cli(tmp_path: Path, sandbox: Sandbox) -> Cli:
    """The CLI wired to the in-process sandbox (profile base_url http://testserver)."""
    return Cli(write_profile(tmp_path, "http://testserver"))


@pytest.fixture
def make_order(cli: Cli, sandbox: Sandbox) -> Any:
    """Create a checkout in the sandbox (and approve it unless told otherwise)."""

    def make(
        ref: str, amount: str = "12.34", kind: str = "preauth", action: str | None = "approve",
        currency: str = "EUR",
    ) -> None:
        result = cli(
            "checkout", "--amount", amount, "--ref", ref, "--type", kind, "--currency", currency
        )
        assert result.exit_code == 0, result.stderr
        if action is not None:
            sandbox.approve(ref, action)

    return make


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    return ("127.0.0.1", 0)  # loopback only, any free port


class RawServer:
    """A loopback socket server for failures HTTP servers will not produce on demand.

    GET requests are answered with ``get_body`` (JSON); POST requests get ``post_mode``:
    ``"hang"`` (read the request, never answer, until closed) or ``"drop"`` (read, close);
    ``get_mode`` can make GETs hang or drop too.
    """

    def __init__(self, get_body: bytes, post_mode: str, get_mode: str = "answer") -> None:
        import socket
        import threading

        self.get_body = get_body
        self.post_mode = post_mode
        self.get_mode = get_mode
        self.requests: list[bytes] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._open: list[Any] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        import socket

        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(2)
            try:
                data = self._read_request(conn)
            except (TimeoutError, OSError):
                conn.close()
                continue
            self.requests.append(data)
            mode = self.get_mode if data.startswith(b"GET") else self.post_mode
            if mode == "answer":
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(self.get_body)}\r\nConnection: close\r\n\r\n"
                )
                conn.sendall(head.encode() + self.get_body)
                conn.close()
            elif mode == "drop":
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            else:
                self._open.append(conn)  # hang: keep it open, answer nothing

    @staticmethod
    def _read_request(conn: Any) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self._open:
            conn.close()
        self._sock.close()


@pytest.fixture
def raw_server() -> Iterator[Any]:
    servers: list[RawServer] = []

    def start(
        get_body: bytes = b"[]", post_mode: str = "hang", get_mode: str = "answer"
    ) -> RawServer:
        server = RawServer(get_body, post_mode, get_mode)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
