"""A misbehaving gateway on a real port (issue 9, items 4-6): slow drip ended by the overall
deadline, gzip bomb with bounded memory, escape sequences and an echoed key in every output
format, answers that contradict the request."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from walletctl.constants import ExitCode

from .conftest import API_KEY, Run, cli_env, run_cli, write_profile
from .fakegw import Chunk, json_response, response

ESC_TEXT = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\r\x08X"
UNSAFE = ("\x1b", "\x07", "\x08", "\r", "\x9b")


def record(ref: str, type_: str = "ecom.preAuthorisation", amount: str = "1000",
           state: str = "Approved", invoice: str | None = None, **extra: Any) -> dict[str, Any]:
    data = {"clientSystemTransactionId": ref, "type": type_, "state": state,
            "transactionAmount": amount, "currencyCode": "EUR",
            "providerStateCode": "AuthorizedByProvider", "id": f"id-{ref}",
            "transactionDateTime": "2026-11-22T05:52:08.4126040"}
    if invoice:
        data["clientSystemInvoiceId"] = invoice
    data.update(extra)
    return data


def assert_clean(result: Run, what: str) -> None:
    for text in (result.stdout, result.stderr):
        for bad in UNSAFE:
            assert bad not in text, f"{what}: {bad!r} reached the output: {text[:400]!r}"
        assert API_KEY not in text, f"{what}: the API key reached the output"
        assert "Traceback" not in text, f"{what}: {text[-800:]}"
        assert all(len(line) <= 2000 for line in text.splitlines()), what


# -- item 4: overall deadline, capped bodies ---------------------------------------------------


def drip(_m: str, _p: str, _h: dict[str, str], _b: bytes) -> list[Chunk]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
    return [head] + [(b" ", 0.25)] * 400  # 100 s to finish, one byte every 0.25 s


@pytest.mark.parametrize(
    ("args", "code"),
    [(["lookup", "R-1"], ExitCode.NETWORK),
     (["checkout", "--amount", "1", "--ref", "R-1"], ExitCode.UNKNOWN_OUTCOME)],
)
def test_slow_drip_gateway_is_ended_by_the_overall_deadline(
    gateway: Any, tmp_path: Path, args: list[str], code: ExitCode
) -> None:
    gw = gateway(drip)
    config = write_profile(tmp_path, gw.url, timeout=0.5)
    # every byte arrives well within the 0.5 s read timeout: only the deadline (1 s) ends it
    result = run_cli(config, *args, timeout=30)
    assert result.code == code, result.out
    assert "no complete answer within 1 s" in result.stderr, result.stderr


def _gzip_bomb(size: int) -> bytes:
    """A valid gzip of ``size`` zero bytes, built fast: after a full flush the compressor
    forgets its history, so every further 1 MiB block compresses to the same bytes."""
    block = b"\0" * (1024 * 1024)
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    end = comp.flush()[:-8]  # the final empty block, without the 2-block trailer
    crc = 0
    for _ in range(size // len(block)):
        crc = zlib.crc32(block, crc)
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    return first + again * (size // len(block) - 1) + end + trailer


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _gzip_bomb(1024 * 1024 * 1024)  # 1 GiB of zeros, about 1 MiB on the wire


@pytest.mark.slow
def test_gzip_bomb_is_refused_with_bounded_memory(
    gateway: Any, tmp_path: Path, bomb: bytes
) -> None:
    answer = response(200, bomb, {"Content-Encoding": "gzip"})
    gw = gateway(lambda *_: [answer])
    config = write_profile(tmp_path, gw.url)
    # The child reports its own peak (VmHWM of its own address space) as it exits: wait4's
    # ru_maxrss would also count the RSS of this (large) test process it was spawned from.
    peak_file = tmp_path / "peak"
    wrapper = (
        "import atexit, re, runpy, sys\n"
        "def peak():\n"
        "    status = open('/proc/self/status').read()\n"
        f"    open({str(peak_file)!r}, 'w').write(re.search(r'VmHWM:\\s+(\\d+)', status)[1])\n"
        "atexit.register(peak)\n"
        "sys.argv = ['walletctl', 'lookup', 'R-1']\n"
        "runpy.run_module('walletctl', run_name='__main__')\n"
    )
    child = subprocess.run([sys.executable, "-c", wrapper], env=cli_env(config),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
                           check=False)
    err = child.stderr
    assert child.returncode == ExitCode.GATEWAY, err.decode()
    assert b"inflates past 16 MiB" in err, err
    peak_mib = int(peak_file.read_text()) / 1024  # kB
    assert peak_mib < 200, f"peak RSS {peak_mib:.0f} MiB for a 1 GiB gzip bomb"
    print(f"gzip bomb: {len(bomb) / 1e6:.1f} MB on the wire, peak RSS {peak_mib:.0f} MiB")


def test_oversized_plain_body_is_refused(gateway: Any, tmp_path: Path) -> None:
    big = b"[" + b" " * (5 * 1024 * 1024) + b"]"
    gw = gateway(lambda *_: [response(200, big)])
    result = run_cli(write_profile(tmp_path, gw.url), "lookup", "R-1")
    assert result.code == ExitCode.GATEWAY, result.out
    assert "larger than 4 MiB" in result.stderr


# -- item 5: sanitised gateway text, scrubbed secrets ------------------------------------------


def echoing(method: str, path: str, headers: dict[str, str], _b: bytes) -> list[Chunk]:
    """Every answer carries escape sequences and the credential it was sent."""
    auth = headers.get("authorization", "")
    key = auth.partition(" ")[2]
    dirty = f"{ESC_TEXT} {key} {auth}"
    if path.startswith("/api/v5/checkout"):
        return [json_response(200, {"redirectUrl": f"https://pay.example/{key}/\x1b[31mx"})]
    if method == "GET":
        rec = record("R-1", providerStateCode=dirty, apmDetails={"apmProviderName": dirty})
        rec["state"] = "Approved"
        return [json_response(200, [rec])]
    return [json_response(200, {"id": dirty, "state": "Approved", "providerStateCode": dirty,
                                "clientSystemTransactionId": "R-1-CAP1"})]


@pytest.mark.parametrize("fmt", ["table", "json", "ndjson", "csv"])
@pytest.mark.parametrize(
    "args",
    [["lookup", "R-1"], ["capture", "R-1", "--amount", "1"],
     ["checkout", "--amount", "1", "--ref", "R-2"]],
    ids=["lookup", "capture", "checkout"],
)
def test_escape_sequences_and_an_echoed_key_never_reach_any_output(
    gateway: Any, tmp_path: Path, fmt: str, args: list[str]
) -> None:
    gw = gateway(echoing)
    config = write_profile(tmp_path, gw.url)
    # Wide enough that the table shows the provider state (80 columns leave it out).
    result = run_cli(config, "-o", fmt, *args, env={**cli_env(config), "COLUMNS": "250"})
    assert result.code == ExitCode.OK, result.out
    assert_clean(result, f"{fmt} {args}")
    assert "\\x1b" in result.stdout or "sha256:" in result.stdout, result.stdout


@pytest.mark.parametrize("status", [302, 400, 503])
def test_error_paths_are_sanitised_and_scrubbed(
    gateway: Any, tmp_path: Path, status: int
) -> None:
    def handler(_m: str, _p: str, headers: dict[str, str], _b: bytes) -> list[Chunk]:
        key = headers.get("authorization", "").partition(" ")[2]
        body = {"code": f"E{ESC_TEXT}", "description": f"bad {key}{ESC_TEXT}",
                "details": {"message": f"{ESC_TEXT} {key}" * 2000}}
        return [json_response(status, body, {"Location": f"https://x.example/{key}?\x1b[2J"})]

    gw = gateway(handler)
    config = write_profile(tmp_path, gw.url)
    for args in (["lookup", "R-1"], ["-v", "lookup", "R-1"],
                 ["checkout", "--amount", "1", "--ref", "R-2"]):
        result = run_cli(config, *args)
        assert result.code not in (0, 1), result.out
        assert_clean(result, f"HTTP {status} {args}")


# -- item 6: answers checked against the request -----------------------------------------------


def capture_gateway(answer: dict[str, Any], lookup: list[dict[str, Any]] | None = None) -> Any:
    def handler(method: str, _p: str, _h: dict[str, str], _b: bytes) -> list[Chunk]:
        if method == "GET":
            return [json_response(200, lookup or [record("R-1")])]
        return [json_response(200, answer)]
    return handler


@pytest.mark.parametrize(
    "answer",
    [{"state": "Approved", "clientSystemTransactionId": "OTHER-9"},
     {"state": "Approved", "clientSystemTransactionId": "R-1-CAP1", "amount": "999"},
     {"state": "Approved", "clientSystemTransactionId": "R-1-CAP1", "currencyCode": "USD"},
     {"state": "Approved", "type": "ecom.refund"},
     {"state": "Pending", "clientSystemTransactionId": "R-1-CAP1"}],
    ids=["other-ref", "other-amount", "other-currency", "other-operation", "pending"],
)
def test_an_answer_that_is_not_this_capture_is_an_unknown_outcome(
    gateway: Any, tmp_path: Path, answer: dict[str, Any]
) -> None:
    gw = gateway(capture_gateway(answer))
    result = run_cli(write_profile(tmp_path, gw.url), "capture", "R-1", "--amount", "1")
    assert result.code == ExitCode.UNKNOWN_OUTCOME, result.out
    assert "walletctl lookup R-1-CAP1" in result.stderr, result.stderr


def test_a_matching_answer_is_a_success(gateway: Any, tmp_path: Path) -> None:
    answer = {"state": "Approved", "clientSystemTransactionId": "R-1-CAP1", "amount": "100",
              "currencyCode": "EUR", "type": "ecom.capture", "clientSystemInvoiceId": "R-1"}
    gw = gateway(capture_gateway(answer))
    result = run_cli(write_profile(tmp_path, gw.url), "capture", "R-1", "--amount", "1")
    assert result.code == ExitCode.OK, result.out
    assert json.loads(result.stdout)["state"] == "Approved"


def test_negative_amounts_in_a_lookup_are_refused_before_any_capture(
    gateway: Any, tmp_path: Path
) -> None:
    lookup = [record("R-1", amount="1000"),
              record("R-1-CAP1", "ecom.capture", "-5000", invoice="R-1")]
    gw = gateway(capture_gateway({"state": "Approved"}, lookup))
    result = run_cli(write_profile(tmp_path, gw.url), "capture", "R-1", "--amount", "20")
    assert result.code == ExitCode.GATEWAY, result.out
    assert "must be a non-negative amount" in result.stderr
    assert [r[0] for r in gw.requests] == ["GET"], "nothing may be sent after a bad lookup"
