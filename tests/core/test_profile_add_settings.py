"""Item 1: one command makes a working profile; profile check says what each command needs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from walletctl.cli.main import app
from walletctl.cli.state import ENV
from walletctl.config import profiles_file
from walletctl.constants import ExitCode


def _run(config: Path, *argv: str, input: str | None = None) -> object:
    return CliRunner().invoke(app, ["--config", str(config), *argv], input=input)


def test_every_setting_has_a_flag(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    result = _run(config, "profile", "add", "full", "--base-url", "https://gw.example/prefix",
                  "--merchant-id", "M", "--store-id", "S", "--user-id", "u",
                  "--amount-format", "decimal", "--currency", "gbp", "--timeout", "12.5",
                  "--timezone", "Europe/London", "--auth-scheme", "Basic", "--username", "svc",
                  "--key-file", str(tmp_path / "k"), "--service-secret-file",
                  str(tmp_path / "s"), "--redirect-base", "https://shop.example/",
                  "--cancel-url", "https://shop.example/cancel", "--refused-url",
                  "https://shop.example/refused", "--path", "checkout=/api/v6/checkout",
                  "--default")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    p = profiles_file.load_file(config).profiles["full"]
    assert (p.amount_format, p.currency, p.timeout, p.timezone) == (
        "decimal", "GBP", 12.5, "Europe/London")
    assert (p.auth.scheme, p.auth.username) == ("Basic", "svc")
    assert p.auth.key_file == tmp_path / "k"
    assert p.auth.service_secret_file == tmp_path / "s"
    assert p.redirects == {
        "success_url": "https://shop.example/ok", "error_url": "https://shop.example/error",
        "pending_url": "https://shop.example/pending", "return_url": "https://shop.example/cart",
        "cancel_url": "https://shop.example/cancel", "refused_url": "https://shop.example/refused"}
    assert p.paths == {"checkout": "/api/v6/checkout"}


def test_a_terminal_is_asked_for_missing_ids_never_for_a_secret(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    ENV.stdin_isatty = True
    result = _run(config, "profile", "add", "asked", "--key-env", "ASKED_KEY",
                  input="https://gw.example\nM-1\nS-1\nops\nOPS_SECRET\neur\nhttps://shop.example\n")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    prompts = result.stderr  # type: ignore[attr-defined]
    assert "Gateway base URL" in prompts
    # the service user's secret: where it is, next to the user (never the secret itself)
    assert "The service user's secret: the environment variable holding it" in prompts
    assert "key" not in prompts.split("saved profile")[0].lower().replace("--key-env", "")
    p = profiles_file.load_file(config).profiles["asked"]
    assert (p.base_url, p.merchant_id, p.store_id, p.user_id) == (
        "https://gw.example", "M-1", "S-1", "ops")
    assert p.redirects["success_url"] == "https://shop.example/ok"
    assert p.currency == "EUR"
    assert p.auth.service_secret_env == "OPS_SECRET"


def test_a_terminal_is_asked_for_the_currency_until_it_is_a_code(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    ENV.stdin_isatty = True
    ids = ["--base-url", "https://gw.example", "--merchant-id", "M", "--store-id", "S",
           "--user-id", "u", "--redirect-base", "https://shop.example"]
    result = _run(config, "profile", "add", "asked", *ids, input="EURO\ngbp\n")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    prompts = result.stderr  # type: ignore[attr-defined]
    assert prompts.count("Default currency, e.g. EUR (--currency;") == 2, prompts
    assert "Error: must be an ISO 4217 three-letter currency code" in prompts, prompts
    assert "no default currency" not in prompts
    assert profiles_file.load_file(config).profiles["asked"].currency == "GBP"
    # Enter: no default currency, and the note says what that means
    result = _run(config, "profile", "add", "none", *ids, input="\n")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert profiles_file.load_file(config).profiles["none"].currency is None
    assert ("walletctl: no default currency: checkout and authorize need --currency on each "
            "call") in result.stderr  # type: ignore[attr-defined]
    # given as a flag: never asked
    result = _run(config, "profile", "add", "flag", *ids, "--currency", "chf", input="")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert "Default currency" not in result.stderr  # type: ignore[attr-defined]
    assert profiles_file.load_file(config).profiles["flag"].currency == "CHF"


def test_a_bad_flag_value_names_the_flag(tmp_path: Path) -> None:
    result = _run(tmp_path / "p.toml", "profile", "add", "x", "--base-url", "https://gw",
                  "--merchant-id", "M", "--store-id", "S", "--user-id", "u",
                  "--redirect-base", "not a url")
    assert result.exit_code == ExitCode.USAGE  # type: ignore[attr-defined]
    assert result.stderr.startswith("walletctl: error: --success-url:")  # type: ignore[attr-defined]


def test_serve_prints_a_ready_profile(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0",
                             "--quiet", "--print-profile"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("return_url"):
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    path = tmp_path / "printed.toml"
    path.write_text("".join(lines))
    path.chmod(0o600)
    profile = profiles_file.load_file(path).profiles["sandbox"]
    assert profile.base_url.startswith("http://127.0.0.1:")
    assert profile.auth.service_secret == "sandbox-secret"
    assert set(profile.redirects) >= {"success_url", "error_url", "pending_url", "return_url"}


def test_check_names_what_each_command_needs(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "profiles.toml"
    _run(config, "profile", "add", "bare", "--base-url", "https://gw", "--merchant-id", "M",
         "--store-id", "S", "--user-id", "u", "--key-env", "BARE_KEY")
    monkeypatch.setenv("BARE_KEY", "k-123")
    result = _run(config, "-o", "json", "profile", "check")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    rows = {r["check"]: r for r in json.loads(result.stdout)}  # type: ignore[attr-defined]
    assert rows["checkout"]["warning"] is True
    assert "--success-url" in rows["checkout"]["detail"]
    assert rows["keys"]["warning"] is True
    assert rows["checkout, authorize currency"]["warning"] is True
    assert "`walletctl profile set bare currency EUR" in rows["checkout, authorize currency"][
        "hint"]
    # smoke, scenario by scenario: the browser wallet's service secret is named
    assert rows["smoke browser-wallet"]["warning"] is True
    assert "auth.service_secret_env VAR" in rows["smoke browser-wallet"]["hint"]
