"""No input produces exit 1 (issue 9, items 7-8): each class of bad input gets a one-line
error with its documented exit code, from a real walletctl process; special files are
refused as "not a regular file" at once; ``--debug`` adds a traceback, not a new exit code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.constants import ExitCode

from .conftest import Run, cli_env, run_cli, write_profile

SANDBOX_KEY = "sandbox-api-key"
HUGE = "R" * 100_000


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    from sandbox_fixtures import make_checkout_body
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
        body = make_checkout_body("PRE-1", "5000", "ecom.preAuthorisation")
        headers = {"Authorization": f"PublicApiKey {SANDBOX_KEY}"}
        httpx.post(f"{sandbox.url}/api/v5/checkout", json=body, headers=headers)
        httpx.post(f"{sandbox.url}/_sandbox/checkouts/PRE-1/approve")
        yield sandbox.url


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    made = {
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "deep.toml": b"a = " + b"[" * 100_000 + b"]" * 100_000,
        "dup.json": b'{"amount": "1", "amount": "2"}',
    }
    out = {}
    for name, content in made.items():
        (tmp_path / name).write_bytes(content)
        out[name] = tmp_path / name
    os.mkfifo(tmp_path / "fifo")
    out["fifo"] = tmp_path / "fifo"
    out["zero"] = Path("/dev/zero")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    out["loop"] = tmp_path / "loop1"
    return out


def check_one_line(result: Run, code: int, fragment: str, *, traceback: bool = False) -> None:
    assert result.code == code, result.out[-1500:]
    assert fragment in result.stderr, result.stderr[-1500:]
    assert ("Traceback" in result.stderr) == traceback, result.stderr[-1500:]
    assert all(len(line) <= 2000 for line in result.out.splitlines())
    if not traceback:
        errors = [ln for ln in result.stderr.splitlines() if ln.startswith("walletctl: error:")]
        assert len(errors) <= 1, result.stderr


CASES: list[tuple[list[str], int, str]] = [
    (["capture", "PRE-1", "--amount", "1234567890123456789012345678901"], ExitCode.VALIDATION,
     "--amount: must have at most 15 digits"),
    (["capture", "PRE-1", "--amount", "1e400"], ExitCode.VALIDATION, "--amount:"),
    (["capture", "PRE-1", "--amount", "\u0661\u0662"], ExitCode.VALIDATION, "is not a number"),
    (["capture", "PRE-1", "--amount", "12,50"], ExitCode.VALIDATION,
     "'12,50' is not a number (the decimal separator is a dot: 12.50)"),
    (["capture", "PRE-1", "--amount", "1e3"], ExitCode.VALIDATION,
     "'1e3' is not a number (digits and at most one dot; no exponent)"),
    (["sandbox", "ledger", "--url", "http://[::1"], ExitCode.USAGE,
     "not a sandbox URL: 'http://[::1' (an IPv6 host needs its closing ])"),
    (["checkout", "--amount", "99999999999999999999999999999", "--ref", "X-1"],
     ExitCode.VALIDATION, "amount: must have at most 15 digits"),
    (["--timeout", "inf", "lookup", "PRE-1"], ExitCode.USAGE, "--timeout"),
    (["--timeout", "nan", "lookup", "PRE-1"], ExitCode.USAGE, "--timeout"),
    (["--timeout", "1e309", "lookup", "PRE-1"], ExitCode.USAGE, "--timeout"),
    (["lookup", HUGE], ExitCode.VALIDATION, "REF: is 100000 characters long; a reference "
     "must be 1-64 printable characters"),
    (["lookup", "PRE-1\n#"], ExitCode.VALIDATION, "REF: has U+000A at character 6"),
    (["lookup", "R\udcff"], ExitCode.VALIDATION, "REF: has U+DCFF (a lone surrogate"),
    (["lookup", "PRE-1 "], ExitCode.VALIDATION, "REF: ends with a space"),
    (["account", HUGE, "--encryption-key-id", "k"], ExitCode.VALIDATION,
     "transactionAccountId: must be at most 255 characters"),
    (["account", "A-1", "--encryption-key-id", "k\udcff"], ExitCode.VALIDATION,
     "--encryption-key-id: is not valid text"),
    (["checkout", "--amount", "1", "--ref", HUGE], ExitCode.VALIDATION,
     "clientSystemTransactionId"),
    (["capture", "PRE-1", "--amount", "1", "--new-ref", HUGE], ExitCode.VALIDATION,
     "clientSystemTransactionId"),
    (["sandbox", "reset", "--url", ""], ExitCode.USAGE, "--url: must not be empty"),
    (["sandbox", "ledger", "--url", "\x08"], ExitCode.USAGE, "--url: must be an http(s) URL"),
]


@pytest.mark.parametrize(("args", "code", "fragment"), CASES,
                         ids=[f"{i}-{c[0][0]}" for i, c in enumerate(CASES)])
def test_bad_values_get_their_documented_exit_code(
    sandbox_url: str, tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    config = write_profile(tmp_path, sandbox_url)
    result = run_cli(config, *args, env=cli_env(config, key=SANDBOX_KEY))
    check_one_line(result, code, fragment)


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [(["checkout", "--from-file", "{deep.json}"], ExitCode.VALIDATION, "nested deeper than 32"),
     (["checkout", "--from-file", "{deep.toml}"], ExitCode.VALIDATION, "nested deeper than 32"),
     (["checkout", "--from-file", "{dup.json}"], ExitCode.VALIDATION, "duplicate key 'amount'"),
     (["account", "--event", "{deep.json}", "--encryption-key-id", "k"], ExitCode.VALIDATION,
      "nested deeper than 32"),
     (["checkout", "--from-file", "{fifo}"], ExitCode.USAGE, "is not a regular file"),
     (["checkout", "--from-file", "{zero}"], ExitCode.USAGE, "is not a regular file"),
     (["account", "--event", "{fifo}", "--encryption-key-id", "k"], ExitCode.USAGE,
      "is not a regular file"),
     (["authorize", "--account", "A-1", "--amount", "1", "--ref", "AUTH-1",
       "--encryption-key-id", "k", "--3ds", "{fifo}"], ExitCode.USAGE, "is not a regular file")],
    ids=["deep-json", "deep-toml", "duplicate-keys", "deep-event", "fifo-from-file",
         "dev-zero", "fifo-event", "fifo-3ds"],
)
def test_bad_input_files(sandbox_url: str, tmp_path: Path, files: dict[str, Path],
                         args: list[str], code: int, fragment: str) -> None:
    config = write_profile(tmp_path, sandbox_url)
    argv = [str(files[a[1:-1]]) if a.startswith("{") else a for a in args]
    result = run_cli(config, *argv, env=cli_env(config, key=SANDBOX_KEY), timeout=30)
    check_one_line(result, code, fragment)


@pytest.mark.parametrize("which", ["fifo", "zero", "loop"])
def test_special_config_files_are_refused(files: dict[str, Path], which: str) -> None:
    result = run_cli(files[which], "lookup", "PRE-1", timeout=30)
    fragment = "Too many levels of symbolic links" if which == "loop" else "not a regular file"
    check_one_line(result, ExitCode.CONFIG, fragment)


@pytest.mark.parametrize("timeout", ["1e300", "3601", "nan", "inf"])
def test_absurd_profile_timeouts_are_config_errors(tmp_path: Path, timeout: str) -> None:
    config = write_profile(tmp_path, "http://127.0.0.1:9", timeout=timeout)
    result = run_cli(config, "lookup", "PRE-1")
    check_one_line(result, ExitCode.CONFIG, "timeout")


@pytest.mark.parametrize(
    ("args", "code"),
    [(["lookup", "NOPE-9"], ExitCode.DECLINED),  # 404 from the sandbox
     (["capture", "PRE-1", "--amount", "999999"], ExitCode.DECLINED),  # pre-flight refusal
     (["lookup", "PRE-1\n"], ExitCode.VALIDATION)],
)
def test_debug_adds_a_traceback_and_keeps_the_exit_code(
    sandbox_url: str, tmp_path: Path, args: list[str], code: int
) -> None:
    config = write_profile(tmp_path, sandbox_url)
    result = run_cli(config, "--debug", *args, env=cli_env(config, key=SANDBOX_KEY))
    check_one_line(result, code, "walletctl: error:", traceback=True)
    assert SANDBOX_KEY not in result.out


def test_nested_config_directories_are_created_private(tmp_path: Path, monkeypatch: Any) -> None:
    from walletctl.config.profiles_file import write_private

    target = tmp_path / "a" / "b" / "c" / "profiles.toml"
    write_private(target, b"x = 1\n")
    for directory in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert (directory.stat().st_mode & 0o777) == 0o700, directory
