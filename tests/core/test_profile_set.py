"""``walletctl profile set/unset/default`` driven as a stranger would: the whole command line
(in-process, :mod:`cli_runner`: no signal or terminal is the point here), a profile made only
with walletctl commands, the file read back from disk.

Also: every hint carries the ``--config`` / ``-p`` the user typed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli_runner import run_walletctl


def run(config: Path, *argv: str, code: int = 0,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = run_walletctl(["--config", str(config), *argv],
                         env={**os.environ, "COLUMNS": "200", **(env or {})})
    assert proc.returncode == code, (argv, proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two profiles made with `profile add`, plus a comment of the user's."""
    config = tmp_path_factory.mktemp("cfg") / "profiles.toml"
    for name in ("desk", "other"):
        run(config, "profile", "add", name, "--base-url", "http://127.0.0.1:9",
            "--merchant-id", "M-1", "--store-id", "S-1", "--user-id", "ops")
    config.write_text("# the team's profiles: ask Ana before editing\n" + config.read_text())
    return config


@pytest.fixture
def config(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "profiles.toml"
    copy.write_bytes(made.read_bytes())
    copy.chmod(0o600)
    return copy


def profile(config: Path, name: str = "desk") -> dict[str, object]:
    table: dict[str, object] = tomllib.loads(config.read_text())["profiles"][name]
    return table


def test_set_changes_one_setting_and_keeps_everything_else(config: Path) -> None:
    other_before = profile(config, "other")
    run(config, "profile", "set", "desk", "currency", "EUR")
    run(config, "profile", "set", "desk", "timeout", "12.5")
    run(config, "profile", "set", "desk", "redirects.success_url", "https://shop.example/ok")
    run(config, "profile", "set", "desk", "history.approvals.refund", "250.00")
    run(config, "profile", "set", "desk", "history.enabled", "true")
    desk = profile(config)
    assert desk["currency"] == "EUR"
    assert desk["timeout"] == 12.5
    assert desk["redirects"] == {"success_url": "https://shop.example/ok"}
    assert desk["history"] == {"approvals": {"refund": "250.00"}, "enabled": True}
    assert profile(config, "other") == other_before
    text = config.read_text()
    assert text.startswith("# the team's profiles: ask Ana before editing\n")
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    shown = json.loads(run(config, "-o", "json", "profile", "show", "desk").stdout)
    assert shown["currency"] == "EUR"
    assert shown["timeout"] == 12.5


def test_setting_a_key_source_replaces_the_other_and_says_so(config: Path,
                                                              tmp_path: Path) -> None:
    assert profile(config)["auth"] == {"scheme": "PublicApiKey", "key_env": "WALLETCTL_DESK_KEY"}
    key = tmp_path / "desk.key"
    out = run(config, "-o", "json", "profile", "set", "desk", "auth.key_file", str(key))
    assert json.loads(out.stdout)["removed"] == ["auth.key_env"]
    assert "removed auth.key_env" in out.stderr
    assert profile(config)["auth"] == {"scheme": "PublicApiKey", "key_file": str(key)}


@pytest.mark.parametrize(("key", "value", "rule"), [
    ("timeout", "-3", "timeout: must be greater than 0 and at most"),
    ("timeout", "soon", "timeout: must be a number of seconds"),
    ("currency", "EURO", "currency: must be an ISO 4217"),
    ("base_url", "ftp://gw.example", "base_url: must be an http(s) URL"),
    ("amount_format", "cents", "amount_format: must be 'minor' or 'decimal'"),
    ("history.approval_hours", "0", "history.approval_hours: must be a whole number of hours"),
    ("history.approvals.refund", "lots", "history.approvals.refund: must be an amount"),
    ("auth.keyring", "maybe", "auth.keyring: must be true or false"),
    ("auth.key_env", "not a name", "auth.key_env: must be an environment variable name"),
    ("curency", "EUR", "curency: not a profile setting"),
    ("auth", "x", "auth: is a table; set one of its keys"),
])
def test_a_bad_value_is_one_line_naming_key_and_rule_and_changes_nothing(
        config: Path, key: str, value: str, rule: str) -> None:
    before = config.read_bytes()
    out = run(config, "profile", "set", "desk", key, value, code=2)
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"walletctl: error: {rule}"), out.stderr
    assert config.read_bytes() == before


def test_an_inline_secret_is_refused_and_never_echoed(config: Path) -> None:
    before = config.read_bytes()
    for key in ("auth.key", "auth.service_secret"):
        out = run(config, "profile", "set", "desk", key, "s3cr3t-value", code=2)
        assert out.stderr.startswith(f"walletctl: error: {key}: a secret is not taken from the "
                                     "command line")
        assert "s3cr3t-value" not in out.stderr + out.stdout
    assert config.read_bytes() == before


def test_unset_goes_back_to_the_default_and_refuses_a_required_key(config: Path) -> None:
    run(config, "profile", "set", "desk", "history.limits.capture", "10.00")
    run(config, "profile", "unset", "desk", "history.limits.capture")
    assert "history" not in profile(config)  # tables left empty go too
    out = run(config, "-o", "json", "profile", "unset", "desk", "timezone")
    assert json.loads(out.stdout)["changed"] is False
    before = config.read_bytes()
    out = run(config, "profile", "unset", "desk", "merchant_id", code=2)
    assert out.stderr.startswith("walletctl: error: merchant_id: required, it cannot be unset")
    assert config.read_bytes() == before


def test_default_switches_the_selected_profile(config: Path) -> None:
    assert tomllib.loads(config.read_text())["default_profile"] == "desk"
    run(config, "profile", "default", "other")
    assert tomllib.loads(config.read_text())["default_profile"] == "other"
    listed = json.loads(run(config, "-o", "json", "profile", "list").stdout)
    assert [r["name"] for r in listed if r["default"]] == ["other"]
    before = config.read_bytes()
    out = run(config, "profile", "default", "nope", code=3)
    assert out.stderr.startswith("walletctl: error: unknown profile 'nope'")
    assert config.read_bytes() == before


def test_add_force_names_what_it_resets(config: Path) -> None:
    run(config, "profile", "set", "desk", "currency", "EUR")
    run(config, "profile", "set", "desk", "history.approvals.capture", "5.00")
    out = run(config, "-o", "json", "profile", "add", "desk", "--force", "--base-url",
              "http://127.0.0.1:9", "--merchant-id", "M-1", "--store-id", "S-1",
              "--user-id", "ops")
    assert json.loads(out.stdout)["reset"] == ["currency", "history.approvals.capture"]
    assert "--force replaced the whole profile 'desk': reset currency, " in out.stderr
    assert "profile set desk KEY VALUE" in out.stderr


# --------------------------------------------------------------------------- hints


@pytest.fixture
def refusing_gateway() -> Iterator[str]:
    """A gateway that answers every request 401 (credentials refused)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"code":"AUTH-401","description":"AuthenticationError"}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_hints_carry_the_config_and_profile_the_user_gave(config: Path,
                                                          refusing_gateway: str) -> None:
    run(config, "profile", "set", "desk", "base_url", refusing_gateway)
    given = f" --config {config} -p desk`"
    env = {"WALLETCTL_DESK_KEY": "k-1"}
    out = run(config, "-p", "desk", "lookup", "ORDER-1", code=9, env=env)
    assert f"(`walletctl profile check{given})" in out.stderr, out.stderr
    # after the command too (global options may follow it)
    out = run(config, "lookup", "ORDER-1", "-p", "desk", code=9, env=env)
    assert f"(`walletctl profile check{given})" in out.stderr, out.stderr
    checked = run(config, "-p", "desk", "-o", "json", "profile", "check", env=env)
    hints = {r["check"]: r["hint"] for r in json.loads(checked.stdout)}
    currency = hints["checkout, authorize currency"]
    named = f" --config {config}`"  # a command that names its profile needs no -p
    assert currency == f"`walletctl profile set desk currency EUR{named}"
    out = run(config, "-p", "desk", "profile", "set", "nope", "currency", "EUR", code=3)
    assert f"`walletctl profile list{named}" in out.stderr  # it lists every profile
    # a command that already names its profile keeps it; --help needs neither option
    out = run(config, "-p", "desk", "profile", "unset", "desk", "base_url", code=2)
    assert f"`walletctl profile set desk base_url VALUE{named}" in out.stderr


def test_checkouts_missing_redirects_hint_is_a_command_that_works(tmp_path: Path) -> None:
    """A profile made without redirects: checkout names what is missing and hints at
    `profile set`; each command the hint names, run as printed, makes the checkout go through
    (and keeps the profile's other settings, which `profile add --force` would not)."""
    import re
    import shlex

    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = tmp_path / "profiles.toml"
    env = {"SHOP_KEY": "sandbox-api-key"}
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sandbox:
        run(config, "profile", "add", "shop", "--base-url", sandbox.url, "--merchant-id", "M-1",
            "--store-id", "S-1", "--user-id", "ops", "--currency", "EUR",
            "--key-env", "SHOP_KEY", env=env)
        missing = run(config, "checkout", "--amount", "1", "--ref", "HINT-1", code=2, env=env)
        hint = next(line for line in missing.stderr.splitlines() if line.startswith("hint:"))
        command = shlex.split(re.search(r"`([^`]+)`", hint).group(1))  # type: ignore[union-attr]
        assert command[:4] == ["walletctl", "profile", "set", "shop"], hint
        keys = [command[4], *re.findall(r"redirects\.\w+", hint.partition("(and ")[2])]
        assert sorted(keys) == ["redirects.error_url", "redirects.pending_url",
                                "redirects.return_url", "redirects.success_url"], hint
        for key in keys:
            run(config, "profile", "set", "shop", key, "https://shop.example/" + key, env=env)
        assert profile(config, "shop")["auth"] == {"scheme": "PublicApiKey", "key_env": "SHOP_KEY"}
        done = run(config, "-o", "json", "checkout", "--amount", "1", "--ref", "HINT-1", env=env)
        assert json.loads(done.stdout)["redirectUrl"].startswith(sandbox.url + "/pay/")
