"""Issue 22 (part C): inputs are checked before the network, no input exits 1 or hangs.

Every test runs walletctl as a real subprocess with a hard subprocess timeout, against a
gateway that is down, a fake gateway on a real port, or no gateway at all.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from timescale import scaled
from walletctl.constants import ExitCode
from walletctl.ops.batch.driver import ResultsWriter

from .conftest import cli_env, run_cli, write_profile
from .fakegw import json_response


def _down_url() -> str:
    """A loopback port nobody listens on: every connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def down(tmp_path: Path) -> Path:
    return write_profile(tmp_path, _down_url())


@pytest.mark.parametrize("args", [
    ["capture", "ORDER-1", "--amount", "1,50"],
    ["refund", "ORDER-1", "--amount", "-3", "--yes"],
    ["capture", "ORDER-1", "--currency", "EURO"],
    ["reverse", "caf\udce9"],
    ["refund", "ORDER\t1", "--yes"],
    ["capture", "ORDER-1", "--new-ref", "NEW-1 "],
    ["lookup", " ORDER-1"],
    ["checkout", "--amount", "1,5", "--ref", "R-1"],
    ["authorize", "--account", "A-1", "--encryption-key-id", "K-1", "--ref", "R\u200b1",
     "--amount", "1"],
])
def test_bad_input_is_exit_4_even_when_the_gateway_is_down(down: Path, args: list[str]) -> None:
    result = run_cli(down, *args, timeout=30)  # "caf\udce9" is sent as the bytes caf\xe9
    assert result.code == ExitCode.VALIDATION, result.out
    assert "could not connect" not in result.stderr
    assert "Traceback" not in result.out
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_same_command_with_good_input_reaches_the_network(down: Path) -> None:
    """The control: the inputs above fail on their own, not because the gateway is down."""
    result = run_cli(down, "capture", "ORDER-1", "--amount", "1.50", timeout=30)
    assert result.code == ExitCode.NETWORK, result.out


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"fifo": fifo, "dir": folder, "dev": Path("/dev/full")}


@pytest.mark.parametrize("kind", ["fifo", "dir", "dev"])
@pytest.mark.parametrize("option", ["--journal", "--results"])
def test_batch_output_paths_are_checked_before_anything_is_sent(
    tmp_path: Path, specials: dict[str, Path], kind: str, option: str, gateway: Any
) -> None:
    gw = gateway(lambda *_: [json_response(200, [])])
    config = write_profile(tmp_path, gw.url)
    rows = tmp_path / "rows.csv"
    rows.write_text("ref,amount\nORDER-1,1.00\n")
    result = run_cli(config, "capture", "--batch", str(rows), option, str(specials[kind]),
                     timeout=30)
    assert result.code == ExitCode.VALIDATION, result.out
    assert option in result.stderr
    assert "not a regular file" in result.stderr
    assert gw.requests == []  # nothing looked up, nothing sent


@pytest.mark.parametrize("kind", ["fifo", "dir", "dev"])
@pytest.mark.parametrize("option", ["--junit", "--json-file"])
def test_smoke_report_paths_are_checked_before_the_run(
    tmp_path: Path, specials: dict[str, Path], kind: str, option: str
) -> None:
    result = run_cli(None, "smoke", "--embedded", option, str(specials[kind]), timeout=30)
    # every unusable report path, a directory too, is exit 4 (docs/ci.md), nothing run
    assert result.code == ExitCode.VALIDATION, result.out
    assert option in result.stderr
    assert "PASSED" not in result.out


def test_results_that_fail_mid_run_keep_what_was_written() -> None:
    """A /dev/full-style failure after the run started: the writer stops writing, says why
    and after how many rows, and never raises into the run."""
    writer = ResultsWriter(Path("/dev/full"))
    for n in range(300):  # the 200th row flushes: the device answers ENOSPC
        writer.write({"line": n, "op": "capture", "ref": f"R-{n}"})
    writer.close()
    assert writer.failed is not None
    assert "No space left on device" in writer.failed


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_sandbox_wait_refuses_a_timeout_that_is_not_finite(value: str) -> None:
    started = time.monotonic()
    result = run_cli(None, "sandbox", "wait", _down_url(), "--timeout", value, timeout=20)
    assert time.monotonic() - started < scaled(15)
    assert result.code == ExitCode.USAGE, result.out  # a bad option value, like --timeout x
    assert "--timeout" in result.stderr


def test_a_huge_retry_after_ends_the_batch_at_once(gateway: Any, tmp_path: Path) -> None:
    gw = gateway(lambda *_: [json_response(429, {"code": "TooMany"},
                                           {"Retry-After": "86400"})])
    config = write_profile(tmp_path, gw.url)
    refs = tmp_path / "refs.csv"
    refs.write_text("ref\n" + "".join(f"R-{n}\n" for n in range(40)))
    started = time.monotonic()
    result = run_cli(config, "-o", "json", "lookup", "--batch", str(refs), timeout=60)
    assert time.monotonic() - started < scaled(30)  # not 60 s a pause, 50 pauses a reference
    assert result.code == ExitCode.GATEWAY, result.out
    assert "Retry-After 86400 s" in result.stderr
    rows = tmp_path / "rows.csv"
    rows.write_text("ref,amount\n" + "".join(f"R-{n},1.00\n" for n in range(10)))
    started = time.monotonic()
    result = run_cli(config, "-o", "json", "capture", "--batch", str(rows), timeout=60)
    assert time.monotonic() - started < scaled(30)
    assert result.code == ExitCode.GATEWAY, result.out
    assert "run the same command again later" in result.stderr


def test_a_non_ascii_admin_token_is_a_usage_error() -> None:
    result = run_cli(None, "sandbox", "ledger", "--url", _down_url(), "--admin-token",
                     "tökén", timeout=20)
    assert result.code == ExitCode.USAGE, result.out
    assert "--admin-token" in result.stderr
    assert "tökén" not in result.out  # a secret is never echoed


def test_control_characters_of_argv_are_shown_escaped(down: Path) -> None:
    for args in (["\x1b[2Jlookup"], ["lookup", "--concurrency", "\x1b[31m"],
                 ["capture", "R-1", "--amount", "\x1b]0;pwned\x07"]):
        result = run_cli(down, *args, timeout=20)
        assert result.code in (ExitCode.USAGE, ExitCode.VALIDATION), result.out
        assert "\x1b" not in result.stderr
        assert "\x07" not in result.stderr
        assert "\\x1b" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv"])
def test_a_field_over_the_csv_limit_is_one_bad_row(down: Path, tmp_path: Path,
                                                   fmt: str) -> None:
    refs = tmp_path / "refs.csv"
    refs.write_text("ref\n" + "x" * 140_000 + "\n" + '"' + "y" * 140_000 + '"\n')
    result = run_cli(down, "-o", fmt, "lookup", "--batch", str(refs), timeout=60)
    assert result.code != ExitCode.ERROR, result.out
    assert "Traceback" not in result.out
    if fmt == "json":  # one whole document, both rows named bad
        import json

        doc = json.loads(result.stdout)
        assert len(doc["rows"]) == 2, result.stdout[-200:]
    rows = tmp_path / "rows.csv"
    rows.write_text('ref,amount\n"' + "y" * 140_000 + '",1\n')
    result = run_cli(down, "capture", "--batch", str(rows), timeout=60)
    assert result.code == ExitCode.VALIDATION, result.out
    assert "line 2" in result.stderr


@pytest.mark.slow
def test_a_sparse_gigabyte_of_nuls_is_read_in_bounded_memory(down: Path,
                                                            tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.csv"
    with sparse.open("wb") as fh:
        fh.truncate(1 << 30)
    for args in (["-o", "json", "lookup", "--batch", str(sparse)],
                 ["capture", "--batch", str(sparse), "--dry-run", "--offline"]):
        proc = subprocess.run(
            [sys.executable, "-c",
             "import resource, runpy, sys\n"
             "resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))\n"
             "sys.argv = ['walletctl', *sys.argv[1:]]\n"
             "runpy.run_module('walletctl', run_name='__main__')\n", *args],
            capture_output=True, env=cli_env(down), timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode in (ExitCode.VALIDATION, ExitCode.DECLINED), err[-800:]
        assert "MemoryError" not in err
        assert "longer than 65,536 bytes" in (err + proc.stdout.decode()), err[-800:]


def test_history_verify_on_a_corrupted_page_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    env = {**cli_env(None), "WALLETCTL_AUDIT_LOG": str(db)}
    from walletctl.history.sqlite import SqliteHistory

    SqliteHistory(db).close()  # the history's own schema
    assert run_cli(None, "history", "verify", env=env, timeout=30).code == ExitCode.OK
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    size = db.stat().st_size
    with db.open("r+b") as fh:  # every page but the first (the schema's tables live there)
        fh.seek(4096)
        fh.write(b"\xff" * (size - 4096))
    result = run_cli(None, "history", "verify", env=env, timeout=30)
    assert result.code == ExitCode.CONFIG, result.out
    assert "Traceback" not in result.out
    assert len(result.stderr.strip().splitlines()) <= 2
