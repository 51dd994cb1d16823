"""One client of the sandbox's admin routes (``/_sandbox/*``): walletctl.client.admin.

From outside: a real ``walletctl sandbox serve`` on a free port, and three kinds of caller
in their own processes (``walletctl sandbox seed|approve|ledger``, ``walletctl smoke``, and a
test suite using the pytest plugin against that sandbox). A ``sitecustomize`` loaded only
by those callers notes every ``/_sandbox/`` request that reaches httpx's transport and
whether :mod:`walletctl.client.admin` is on the call stack: each caller sends some, and
every one of them goes through that module. And from the source: a ``/_sandbox/`` route
path is spelled in ``src/walletctl`` only there and in the sandbox server's package.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import WALLETCTL, wait_for_file

SRC = Path(__file__).resolve().parents[2] / "src" / "walletctl"
TRACE_ENV = "WALLETCTL_TEST_ADMIN_TRACE"
TRACER = f'''
import json, os, sys

if os.environ.get("{TRACE_ENV}"):
    from walletctl.client._httpx import httpx

    _handle = httpx.HTTPTransport.handle_request

    def handle_request(self, request):
        if request.url.path.startswith("/_sandbox/"):
            frame, via = sys._getframe(1), False
            while frame is not None and not via:
                via = frame.f_code.co_filename.replace("\\\\", "/").endswith(
                    "walletctl/client/admin.py")
                frame = frame.f_back
            with open(os.environ["{TRACE_ENV}"], "a", encoding="utf-8") as fh:
                fh.write(json.dumps({{"caller": os.environ.get("TRACE_CALLER", "?"),
                                     "route": request.method + " " + request.url.path,
                                     "via_client": via}}) + "\\n")
        return _handle(self, request)

    httpx.HTTPTransport.handle_request = handle_request
'''
PLUGIN_SUITE = '''
def test_the_plugin_drives_the_served_sandbox(wallet_sandbox):
    assert wallet_sandbox.external
    refs = [t["reference"] for t in wallet_sandbox.ledger()]
    assert refs == []  # the fixture reset it
    with wallet_sandbox.faults(latency=5) as applied:
        assert applied["latency_ms"] == 5
    assert wallet_sandbox.current_faults()["latency_ms"] == 0
'''


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``walletctl sandbox serve`` on a free port (not traced: the server is not a caller)."""
    ready = tmp_path / "served.url"
    proc = subprocess.Popen([*WALLETCTL, "sandbox", "serve", "--port", "0", "--quiet",
                             "--api-key", "ci-key", "--ready-file", str(ready)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        yield wait_for_file(ready, proc).strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_cli_smoke_and_the_plugin_reach_the_sandbox_through_the_one_client(
        served: str, tmp_path: Path, pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.sandbox.scenario import profile_toml

    tracer = tmp_path / "tracer"
    tracer.mkdir()
    (tracer / "sitecustomize.py").write_text(TRACER, encoding="utf-8")
    trace = tmp_path / "trace.ndjson"
    config = tmp_path / "profiles.toml"
    config.write_text(profile_toml(served, name="sbx", key_env="SBX_KEY",
                                   merchant_id="M-1001"), encoding="utf-8")
    config.chmod(0o600)
    for name, value in {"PYTHONPATH": os.pathsep.join(filter(None, [
            str(tracer), os.environ.get("PYTHONPATH")])), TRACE_ENV: str(trace),
            "SBX_KEY": "ci-key", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d"),
            "XDG_CONFIG_HOME": str(tmp_path / "c"), "WALLETCTL_CONFIG": str(config),
            "WALLETCTL_PROFILE": "sbx"}.items():
        monkeypatch.setenv(name, value)

    def walletctl(caller: str, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*WALLETCTL, *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "TRACE_CALLER": caller}, check=False)
        assert done.returncode == 0, done.stderr
        return done

    walletctl("cli", "sandbox", "seed", "3", "--csv", str(tmp_path / "seed.csv"))
    walletctl("cli", "checkout", "--amount", "10.00", "--ref", "ONE-CLIENT-1")
    approved = json.loads(walletctl("cli", "-o", "json", "sandbox", "approve", "ONE-CLIENT-1",
                                    "--url", served).stdout)
    assert approved["state"] == "Approved"
    ledger = json.loads(walletctl("cli", "-o", "json", "sandbox", "ledger").stdout)
    assert len(ledger["transactions"]) == 4
    walletctl("smoke", "smoke", "-s", "redirect-sale")

    monkeypatch.setenv("TRACE_CALLER", "plugin")
    pytester.makepyfile(test_suite=PLUGIN_SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-q", "--wallet-sandbox-url", served,
        "--wallet-sandbox-api-key", "ci-key", timeout=240)
    result.assert_outcomes(passed=1)

    # the tracer tells: a request made past the client is noted as such
    subprocess.run([*WALLETCTL[:1], "-c", "from walletctl.client._httpx import httpx; "
                    f"httpx.get({served + '/_sandbox/health'!r})"], timeout=60, check=True,
                   env={**os.environ, "TRACE_CALLER": "control"})

    seen = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [s for s in seen if s["caller"] == "control"] == [
        {"caller": "control", "route": "GET /_sandbox/health", "via_client": False}]
    seen = [s for s in seen if s["caller"] != "control"]
    routes = {(s["caller"], s["route"].split("/")[2]) for s in seen}
    assert {("cli", "seed"), ("cli", "checkouts"), ("cli", "ledger"), ("cli", "health"),
            ("smoke", "checkouts"), ("smoke", "health"), ("plugin", "health"),
            ("plugin", "reset"), ("plugin", "ledger"), ("plugin", "faults")} <= routes, routes
    assert [s for s in seen if not s["via_client"]] == []


def _route_literals(path: Path) -> list[tuple[int, str]]:
    """String literals (docstrings, help texts and messages aside) that spell a route: they
    start with ``/_sandbox/``, alone or after an f-string's ``{base}``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):  # an f-string's literal parts are Constants of their own
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("/_sandbox/"):
            found.append((node.lineno, node.value))
    return found


def test_route_paths_are_spelled_only_in_the_client_and_the_server() -> None:
    allowed = {SRC / "client" / "admin.py"}
    spelled = {}
    for path in sorted(SRC.rglob("*.py")):
        if path in allowed or (SRC / "sandbox") in path.parents:
            continue
        if found := _route_literals(path):
            spelled[str(path.relative_to(SRC))] = found
    assert spelled == {}, f"/_sandbox/ routes outside walletctl/client/admin.py: {spelled}"
    assert _route_literals(SRC / "client" / "admin.py")  # the check sees what it looks for
