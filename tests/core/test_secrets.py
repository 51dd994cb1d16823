"""The test API key never appears in any output of any command, traced, dry-run or failing."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

from walletctl.cli.state import ENV
from walletctl.constants import ExitCode
from walletctl.masking import fingerprint


def leaks(text: str, secret: str) -> list[str]:
    """The secret, or any 8-character piece of it, found in ``text``."""
    pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}
    return sorted(p for p in pieces if p in text)


def assert_clean(result: Any, secret: str, what: str) -> None:
    for name in ("stdout", "stderr"):
        found = leaks(getattr(result, name), secret)
        assert not found, f"{what}: {name} shows the API key (pieces {found}):\n" + getattr(
            result, name
        )


@pytest.fixture
def orders(cli: Any, make_order: Any) -> Any:
    make_order("AUTH-1", "20.00")
    make_order("AUTH-2", "20.00")
    make_order("SALE-1", "20.00", "sale")
    return cli


COMMANDS = [
    ["checkout", "--amount", "1", "--ref", "NEW-1"],
    ["capture", "AUTH-1", "--amount", "1"],
    ["refund", "SALE-1", "--amount", "1", "--yes"],
    ["reverse", "AUTH-2", "--yes"],
    ["lookup", "AUTH-1"],
]


@pytest.mark.parametrize("output", ["json", "table"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_verbose_and_dry_run_never_show_the_key(
    orders: Any, api_key: str, command: list[str], output: str
) -> None:
    cli = orders
    runs = []
    if command[0] != "lookup":  # dry runs first: the real run may leave nothing to do
        runs.append(["-v", "-o", output, *command, "--dry-run"])
        runs.append(["-o", output, *command, "--dry-run"])
    runs.append(["-v", "-o", output, *command])
    for argv in runs:
        result = cli(*argv)
        assert result.exit_code == ExitCode.OK, (argv, result.stderr)
        assert_clean(result, api_key, " ".join(argv))
        where = result.stdout if "--dry-run" in argv else result.stderr
        assert f"PublicApiKey ****({fingerprint(api_key)})" in where, (
            f"{argv}: the masked Authorization header should be shown:\n{where}"
        )


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_failing_commands_never_show_the_key(
    make_cli: Any, sandbox: Any, api_key: str, command: list[str]
) -> None:
    cli = make_cli("http://testserver")
    wrong = api_key[::-1]
    os.environ["WALLETCTL_TEST_CORE_KEY"] = wrong  # restored by the root isolation fixture
    result = cli("-v", *command)
    assert result.exit_code == ExitCode.AUTH, result.stderr
    assert_clean(result, wrong, " ".join(command))
    assert_clean(result, api_key, " ".join(command))


def test_internal_error_never_shows_the_key(cli: Any, api_key: str) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError(f"unexpected state, header was {request.headers['authorization']}")

    ENV.transport = httpx.MockTransport(broken)
    for argv in (["-v", "lookup", "R"], ["-v", "checkout", "--amount", "1", "--ref", "R"]):
        result = cli(*argv)
        assert result.exit_code == ExitCode.ERROR, result.stderr
        assert_clean(result, api_key, " ".join(argv))


def test_gateway_error_echoing_the_key_is_masked(cli: Any, api_key: str) -> None:
    """A gateway that echoes the Authorization header back in its error must not leak it."""

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400,
            json={"code": "E", "description": "BadRequest",
                  "details": {"message": f"bad header {request.headers['authorization']}"}},
            headers={"X-Echo": request.headers["authorization"]},
        )

    ENV.transport = httpx.MockTransport(echo)
    result = cli("-v", "lookup", "R")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    assert_clean(result, api_key, "lookup against an echoing gateway")


@pytest.mark.parametrize("inline", [False, True])
def test_profile_commands_never_show_the_key(cli: Any, api_key: str, inline: bool) -> None:
    if inline:
        text = cli.config.read_text().replace(
            'key_env = "WALLETCTL_TEST_CORE_KEY"', f'key = "{api_key}"'
        )
        cli.config.write_text(text)
        os.chmod(cli.config, 0o600)
    for argv in (["profile", "list"], ["profile", "show"], ["profile", "show", "core"],
                 ["-v", "profile", "show"], ["-o", "json", "profile", "show"],
                 ["-o", "json", "profile", "list"], ["profile", "check"]):
        result = cli(*argv)
        assert result.exit_code in (ExitCode.OK, ExitCode.NETWORK, ExitCode.AUTH), (
            argv, result.stderr)
        assert_clean(result, api_key, " ".join(argv))
