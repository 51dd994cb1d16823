"""Item 11: the smaller first-hour stumbles."""

from __future__ import annotations

import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner

from walletctl.cli.main import app
from walletctl.constants import ExitCode


def test_embedded_smoke_does_not_offer_lookups_of_a_stopped_sandbox() -> None:
    result = CliRunner().invoke(app, ["smoke", "--embedded", "--scenario", "redirect-sale"])
    assert result.exit_code == 0, result.output
    assert "walletctl lookup REF" not in result.stdout
    assert "stopped with the run" in result.stdout


def test_port_in_use_suggests_port_zero() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "walletctl", "sandbox", "serve", "--port",
                               str(port)], capture_output=True, text=True, timeout=60,
                              check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "hint: --port 0 picks a free port" in proc.stderr


@pytest.mark.parametrize("value", [None, "", "   "])
def test_an_unset_or_empty_key_variable_gets_a_hint(cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                    value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("WALLETCTL_TEST_CORE_KEY", raising=False)
    else:
        monkeypatch.setenv("WALLETCTL_TEST_CORE_KEY", value)
    result = cli("lookup", "R-1")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "hint: " in result.stderr
    assert "read -rs WALLETCTL_TEST_CORE_KEY" in result.stderr


@dataclass
class _Id:
    text: str
    params: str | None = None

    def with_params(self, params: str) -> _Id:
        return _Id(f"{self.text}[{params}]", params)


class _Item:
    def __init__(self, label: str) -> None:
        self._id = _Id("tests/sandbox/test_schemathesis.py::test_no_server_errors")
        self.operation_label = label

    @property
    def nodeid(self) -> str:
        return self._id.text

    def get_closest_marker(self, name: str) -> None:
        return None


class _Timed:
    """A collected test: its module, and whether it is marked slow."""

    def __init__(self, module: str, number: int, slow: bool = False) -> None:
        self.nodeid = f"tests/{module}.py::test_{number}"
        self.slow = slow

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "slow" and self.slow else None


def test_each_worker_starts_with_its_share_of_the_longest_tests() -> None:
    """worksteal hands 3 workers the slices 0-3, 4-7 and 8-11 of 12 tests: each begins with
    slow tests, a module's slow tests stay together, and the rest keep their order."""
    from conftest import longest_first

    items = [_Timed("a", 0), _Timed("b", 1, slow=True), _Timed("a", 2), _Timed("c", 3, True),
             _Timed("b", 4, True), _Timed("a", 5), _Timed("a", 6), _Timed("d", 7, True),
             _Timed("a", 8), _Timed("a", 9), _Timed("a", 10), _Timed("a", 11)]
    ordered = [i.nodeid.removeprefix("tests/").replace(".py::test_", "") for i in
               longest_first(items, 3)]  # type: ignore[arg-type]
    assert ordered == ["b1", "b4", "a0", "a2", "c3", "a5", "a6", "a8", "d7", "a9", "a10", "a11"]
    alone = [i.nodeid.removeprefix("tests/").replace(".py::test_", "") for i in
             longest_first(items, 1)]  # type: ignore[arg-type]
    assert alone == ["b1", "b4", "c3", "d7", "a0", "a2", "a5", "a6", "a8", "a9", "a10", "a11"]


def test_schemathesis_items_get_one_id_per_operation() -> None:
    from conftest import pytest_collection_modifyitems

    items = [_Item("POST /api/v5/checkout"), _Item("GET /api/v5/apmTransactions")]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/sandbox/test_schemathesis.py::test_no_server_errors[POST /api/v5/checkout]",
        "tests/sandbox/test_schemathesis.py::test_no_server_errors[GET /api/v5/apmTransactions]",
    ]
