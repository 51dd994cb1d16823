"""Item 2: a closed stdout ends walletctl quietly, as Unix tools do (status 141, no message).

Every streaming command, as a real subprocess on a real pipe: once with the reader gone
before the first write, once with the reader closing after one line (``| head -1``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from first_hour_fixtures import WALLETCTL, Served
from walletctl.constants import ExitCode

REF = "ORDER-PIPE-1"


@pytest.fixture
def world(served_sandbox: Served, tmp_path: Path) -> tuple[Served, Path]:
    served_sandbox.run("checkout", "--amount", "40.00", "--ref", REF, "--type", "preauth")
    served_sandbox.run("sandbox", "approve", REF)
    served_sandbox.run("capture", REF, "--amount", "10.00")
    rows = tmp_path / "rows.csv"
    rows.write_text("ref,amount,currency\n"
                    + "".join(f"ORDER-BATCH-{i},1.00,EUR\n" for i in range(400)))
    return served_sandbox, rows


def streaming(rows: Path) -> list[list[str]]:
    return [
        ["-o", "ndjson", "lookup", REF],
        ["-o", "table", "lookup", REF],
        ["-o", "ndjson", "sandbox", "ledger"],
        ["-o", "table", "sandbox", "ledger"],
        ["-o", "table", "sandbox", "values"],
        ["-o", "ndjson", "smoke", "--list"],
        ["-o", "table", "profile", "list"],
        ["profile", "example"],
        ["completion", "bash"],
        ["--help"],
        ["capture", "--batch", str(rows), "--dry-run"],
        ["reverse", "--batch", str(rows), "--dry-run", "--yes"],
        ["--debug", "reverse", "--batch", str(rows), "--dry-run", "--yes"],
        ["smoke", "--embedded", "--scenario", "redirect-sale"],
    ]


def _quiet(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "error" not in stderr.lower(), stderr
    assert "Exception ignored" not in stderr, stderr


@pytest.mark.slow
def test_reader_gone_before_the_first_write(world: tuple[Served, Path]) -> None:
    sb, rows = world
    for argv in streaming(rows):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run([*WALLETCTL, *argv], stdout=write_end, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=sb.env, text=True, timeout=60,
                                  check=False)
        finally:
            os.close(write_end)
        assert proc.returncode == ExitCode.CLOSED_PIPE, (argv, proc.returncode, proc.stderr)
        _quiet(proc.stderr)


@pytest.mark.slow
def test_reader_closes_after_one_line(world: tuple[Served, Path]) -> None:
    sb, rows = world
    lines_at_a_time = [argv for argv in streaming(rows)
                       if "--batch" in argv or "ndjson" in argv or "smoke" in argv]
    for argv in lines_at_a_time:
        proc = subprocess.Popen([*WALLETCTL, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=sb.env)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
        assert first, argv
        assert code in (ExitCode.OK, ExitCode.CLOSED_PIPE), (argv, code, stderr)
        _quiet(stderr)
        if "--batch" in argv:  # 400 rows of NDJSON overflow the pipe: the write must fail
            assert code == ExitCode.CLOSED_PIPE, (argv, code)
