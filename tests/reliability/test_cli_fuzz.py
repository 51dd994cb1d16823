"""Property-based CLI fuzz test (issue 9): any options, input files and profile values.

Fails on exit 1 (internal error), a traceback, or an output line over 2,000 characters.
Runs in-process (click's runner) against the sandbox on a real loopback port so a few hundred
invocations fit in well under a minute; the bounded example count keeps CI deterministic in
cost. Not fuzzed here: ``--batch`` row files (the batch's own tests) and ``profile add``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .conftest import KEY_ENV

SANDBOX_KEY = "sandbox-api-key"

# Values that broke walletctl before, plus ordinary ones.
NASTY = [
    "", " ", "-", "0", "-1", "1", "10", "12.345", "1e400", "1E5", "nan", "inf", "-inf", "1e309",
    "123456789012345678901234567890", "٣٤", "１２", "0x10", "1_000", "-0.00",
    "R-1", "ORDER-1", "R\n#", "R#1", "\x1b[2J", "a\x00b", "\udcff", "Ré", "💸",
    "EUR", "eur", "XXX", "US", "sale", "preauth", "ecom.sale", "DE-BY", "DEU", "49-1701234567",
    "https://shop.example/ok", "javascript:alert(1)", "file:///etc/passwd",
    "99999999999999999999", "9223372036854775808", "http://[::1", "http://127.0.0.1:abc",
    ":abc", "http://[", "http://h:99999",
]
LONG = st.sampled_from(["R" * 65, "R" * 5000, "9" * 400, "é" * 3000, "\x1b" * 100])
VALUE = st.one_of(st.sampled_from(NASTY), st.text(max_size=30), LONG)
REF = st.one_of(st.sampled_from(["PRE-1", "SALE-1", "NOPE-1"]), VALUE)

FILE_CONTENT = st.one_of(
    st.sampled_from([
        b"", b"{}", b"[]", b"null", b"1", b'"x"', b"{" * 5000 + b"}" * 5000,
        b"[" * 100000 + b"]" * 100000, b'{"amount":"1","amount":"2"}', b"\xff\xfe\x00",
        b'{"amount": 1e400}', b'{"amount": NaN}', b'{"amount": "1.5"}', b"a = 1\n",
        b'{"threeDSServerTransId":"t","authenticationValue":"v","eci":"05"}',
        b'{"cryptogram":"c","eciIndicator":"05","transactionAccountId":"A"}',
        b'{"code":"E","description":"x","details":{"message":"m"}}',
    ]),
    st.binary(max_size=200),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c,
                                                                        max_size=3),
                 max_leaves=20).map(lambda v: repr(v).encode()),
)
FILE_KIND = st.sampled_from(["json", "toml", "fifo", "dev", "dir", "missing", "stdin"])

COMMANDS: dict[str, list[str]] = {
    "lookup": [],
    "capture": ["--amount", "--currency", "--new-ref", "--dry-run", "--yes"],
    "refund": ["--amount", "--currency", "--new-ref", "--dry-run", "--yes"],
    "reverse": ["--new-ref", "--dry-run", "--yes"],
    "checkout": ["--amount", "--currency", "--ref", "--type", "--from-file", "--email",
                 "--mobile-phone", "--country", "--state", "--zip", "--redirect-timeout",
                 "--success-url", "--language", "--dry-run"],
    "account": ["--event", "--encryption-key-id"],
    "authorize": ["--account", "--event", "--ref", "--amount", "--currency", "--type",
                  "--cryptogram", "--eci", "--3ds", "--encryption-key-id", "--dry-run",
                  "--yes"],
    "keys": ["--refresh", "--show-secret"],
    "profile show": [], "profile list": [], "profile check": [],
    "sandbox ledger": ["--url"], "sandbox values": [], "sandbox faults": ["--url"],
    "sandbox approve": ["--url"], "sandbox 3ds": ["--url"],
    "approvals show": [], "approve": [], "approvals refuse": ["--reason"],
    "recon": ["--since", "--until", "--ref", "--op", "--refs", "--journal", "--concurrency"],
}
for _follow_up in ("capture", "refund", "reverse"):
    COMMANDS[_follow_up].append("--approval")
FLAGS = {"--dry-run", "--yes", "--refresh", "--show-secret"}
FILE_OPTIONS = {"--from-file", "--event", "--3ds", "--refs", "--journal"}
POSITIONAL = {"lookup", "capture", "refund", "reverse", "account", "sandbox approve",
              "sandbox 3ds", "approvals show", "approve", "approvals refuse"}

PROFILE_VALUES = {
    "timeout": st.sampled_from(["5", "0", "-1", "1e300", "inf", "nan", '"5"', "3601", "0.5"]),
    "currency": st.sampled_from(['"EUR"', '"XXX"', '"eur"', "1", '""', '"٣٤"']),
    "amount_format": st.sampled_from(['"minor"', '"decimal"', '"cents"', "1"]),
    "merchant_id": st.sampled_from(['"M-1001"', '""', '"M\\u001b[2J"', '"' + "M" * 3000 + '"']),
}


@st.composite
def invocation(draw: Any) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(COMMANDS)))
    args = name.split()
    if name in POSITIONAL and draw(st.booleans() | st.just(True)):
        args.append(draw(REF))
    files: dict[str, tuple[str, bytes]] = {}
    for option in draw(st.lists(st.sampled_from(COMMANDS[name] or ["-"]), max_size=4,
                                unique=True)):
        if option == "-":
            continue
        if option in FLAGS:
            args.append(option)
        elif option in FILE_OPTIONS:
            files[option] = (draw(FILE_KIND), draw(FILE_CONTENT))
            args += [option, f"@{option}"]
        else:
            args += [option, draw(VALUE)]
    glob: list[str] = []
    if draw(st.booleans()):
        glob += ["-o", draw(st.sampled_from(["table", "json", "ndjson", "csv", "yaml", ""]))]
    if draw(st.integers(0, 4)) == 0:
        glob += ["--timeout", draw(st.sampled_from(["0.5", "inf", "nan", "1e309", "-1", "x"]))]
    if draw(st.integers(0, 5)) == 0:
        glob.append("--debug")
    if draw(st.integers(0, 5)) == 0:
        glob.append("-v")
    profile = {k: draw(v) for k, v in PROFILE_VALUES.items() if draw(st.integers(0, 6)) == 0}
    return {"args": glob + args, "files": files, "profile": profile}


def _materialise(tmp: Path, files: dict[str, tuple[str, bytes]],
                 args: list[str]) -> tuple[list[str], bytes]:
    stdin = b""
    out = list(args)
    for option, (kind, content) in files.items():
        suffix = kind if kind in ("toml", "csv") else "json"
        path = tmp / f"input{option.strip('-')}.{suffix}"
        if kind in ("json", "toml", "csv"):
            path.write_bytes(content)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev":
            path = Path("/dev/zero")
        elif kind == "full":
            path = Path("/dev/full")
        elif kind == "dir":
            path = tmp
        elif kind == "stdin":
            path, stdin = Path("-"), content
        out[out.index(f"@{option}")] = str(path)
    return out, stdin


def _profile(tmp: Path, base_url: str, values: dict[str, str]) -> Path:
    fields = {"base_url": f'"{base_url}"', "merchant_id": '"M-1001"', "store_id": '"S-01"',
              "user_id": '"ops-bot"', "currency": '"EUR"', "amount_format": '"minor"',
              "timeout": "5"}
    fields.update(values)
    text = 'default_profile = "fz"\n[profiles.fz]\n' + "".join(
        f"{k} = {v}\n" for k, v in fields.items())
    text += f'[profiles.fz.auth]\nscheme = "PublicApiKey"\nkey_env = "{KEY_ENV}"\n'
    text += ('[profiles.fz.redirects]\nsuccess_url = "https://s.example/ok"\n'
             'error_url = "https://s.example/e"\npending_url = "https://s.example/p"\n')
    path = tmp / "profiles.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
    return path


@pytest.fixture(scope="module")
def fuzz_sandbox() -> Any:
    import httpx

    from sandbox_fixtures import make_checkout_body
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
        headers = {"Authorization": f"PublicApiKey {SANDBOX_KEY}"}
        for ref, kind in (("PRE-1", "ecom.preAuthorisation"), ("SALE-1", "ecom.sale")):
            body = make_checkout_body(ref, "100000", kind)
            httpx.post(f"{sandbox.url}/api/v5/checkout", json=body, headers=headers)
            httpx.post(f"{sandbox.url}/_sandbox/checkouts/{ref}/approve")
        yield sandbox


def _case(*args: str, files: dict[str, tuple[str, bytes]] | None = None,
          profile: dict[str, str] | None = None) -> dict[str, Any]:
    return {"args": list(args), "files": files or {}, "profile": profile or {}}


# Issue 22's reproducers, run on every CI pass before the generated cases.
REPRODUCERS = [
    _case("capture", "PRE-1", "--amount", "1,50"),
    _case("refund", "SALE-1", "--amount", "-3", "--yes"),
    _case("reverse", "caf\udce9"),
    _case("capture", "caf\udce9", "--amount", "1"),
    _case("lookup", "caf\udce9"),
    _case("sandbox", "ledger", "--admin-token", "tökén"),
    _case("capture", "--batch", "@--batch", "--journal", "@--journal",
          files={"--batch": ("csv", b"ref,amount\nPRE-1,1\n"), "--journal": ("dir", b"")}),
    _case("capture", "--batch", "@--batch", "--results", "@--results",
          files={"--batch": ("csv", b"ref,amount\nPRE-1,1\n"), "--results": ("fifo", b"")}),
    _case("capture", "--batch", "@--batch", "--results", "@--results",
          files={"--batch": ("csv", b"ref,amount\nPRE-1,1\n"), "--results": ("full", b"")}),
    _case("-o", "json", "lookup", "--batch", "@--batch",
          files={"--batch": ("csv", b"ref\n" + b"x" * 140_000 + b"\n")}),
    _case("sandbox", "wait", "http://127.0.0.1:9", "--timeout", "nan"),
    _case("lookup", "PRE-1", profile={"timeout": "1e-9"}),
    _case("\x1b[2Jlookup"),
    _case("capture", "PRE-1", "--amount", "\x1b]0;x\x07"),
    # Issue 35's: an id no database key holds, and URLs that are not URLs.
    _case("approvals", "show", "99999999999999999999"),
    _case("approve", "99999999999999999999"),
    _case("refund", "SALE-1", "--amount", "1", "--yes", "--approval", "99999999999999999999"),
    _case("sandbox", "ledger", "--url", "http://[::1"),
    _case("sandbox", "faults", "--url", "http://127.0.0.1:abc"),
    _case("sandbox", "approve", "PRE-1", "--url", "http://[::1"),
    _case("sandbox", "3ds", "PRE-1", "--url", ":abc"),
]


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("WALLETCTL_FUZZ_EXAMPLES", "200")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(case=invocation())
@example(case=REPRODUCERS[0])
@example(case=REPRODUCERS[1])
@example(case=REPRODUCERS[2])
@example(case=REPRODUCERS[3])
@example(case=REPRODUCERS[4])
@example(case=REPRODUCERS[5])
@example(case=REPRODUCERS[6])
@example(case=REPRODUCERS[7])
@example(case=REPRODUCERS[8])
@example(case=REPRODUCERS[9])
@example(case=REPRODUCERS[10])
@example(case=REPRODUCERS[11])
@example(case=REPRODUCERS[12])
@example(case=REPRODUCERS[13])
@example(case=REPRODUCERS[14])
@example(case=REPRODUCERS[15])
@example(case=REPRODUCERS[16])
@example(case=REPRODUCERS[17])
@example(case=REPRODUCERS[18])
@example(case=REPRODUCERS[19])
@example(case=REPRODUCERS[20])
def test_no_input_crashes_the_cli(case: dict[str, Any], fuzz_sandbox: Any) -> None:
    from walletctl.cli.main import app

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = _profile(tmp, fuzz_sandbox.url, case["profile"])
        args, stdin = _materialise(tmp, case["files"], case["args"])
        env = {KEY_ENV: SANDBOX_KEY, "WALLETCTL_CONFIG": str(config), "COLUMNS": "80",
               "XDG_CACHE_HOME": str(tmp / "cache")}
        result = CliRunner().invoke(app, args, input=stdin, env=env, catch_exceptions=True)
    short_args = [a if len(a) < 60 else f"{a[:40]}...({len(a)} chars)" for a in args]
    shown = f"walletctl {short_args!r}\n--- stdout\n{result.stdout[-600:]}\n--- stderr\n" \
            f"{result.stderr[-600:]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{result.exception!r} escaped\n{shown}")
    assert result.exit_code != 1, f"exit 1 (internal error)\n{shown}"
    debug = "--debug" in args
    for text in (result.stdout, result.stderr):
        assert debug or "Traceback" not in text, f"traceback without --debug\n{shown}"
        long = [line[:120] for line in text.splitlines() if len(line) > 2000]
        assert not long, f"output line over 2,000 characters: {long[0]!r}...\n{shown}"


@pytest.mark.parametrize("case", REPRODUCERS, ids=[" ".join(c["args"])[:40] for c in REPRODUCERS])
def test_reproducers_end_in_time_with_a_documented_code(case: dict[str, Any],
                                                        fuzz_sandbox: Any) -> None:
    """The same reproducers as a real process under a hard timeout: a hang fails the test
    instead of holding the suite (the in-process runner above cannot bound time)."""
    import subprocess
    import sys

    from walletctl.constants import ExitCode

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = _profile(tmp, fuzz_sandbox.url, case["profile"])
        args, stdin = _materialise(tmp, case["files"], case["args"])
        env = {**os.environ, KEY_ENV: SANDBOX_KEY, "WALLETCTL_CONFIG": str(config),
               "COLUMNS": "80", "XDG_CACHE_HOME": str(tmp / "cache"),
               "WALLETCTL_AUDIT_LOG": str(tmp / "history.db")}
        proc = subprocess.run([sys.executable, "-m", "walletctl", *args], input=stdin,
                              capture_output=True, env=env, timeout=60)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in {int(c) for c in ExitCode} - {int(ExitCode.ERROR)}, err[-600:]
    assert "Traceback" not in err
    assert "\x1b" not in err
