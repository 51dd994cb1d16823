"""`walletctl profile list|show|add|remove|check` through the real app (CliRunner)."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from walletctl.cli.main import app
from walletctl.cli.state import ENV
from walletctl.config import profiles_file
from walletctl.constants import ExitCode

posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")

ENV_SECRET = "EnvSecret-11aa"
FILE_SECRET = "FileSecret-22bb"
INLINE_SECRET = "InlineSecret-33cc"
SERVICE_SECRET = "ServiceSecret-44dd"
ALL_SECRETS = (ENV_SECRET, FILE_SECRET, INLINE_SECRET, SERVICE_SECRET)

PROFILES = """\
default_profile = "sandbox"

[profiles.sandbox]
base_url = "http://127.0.0.1:8765"
merchant_id = "M-1001"
store_id = "S-01"
user_id = "ops-bot"
currency = "EUR"

[profiles.sandbox.auth]
key_env = "WALLETCTL_SANDBOX_KEY"
service_secret_env = "WALLETCTL_SERVICE_SECRET"

[profiles.prod]
base_url = "https://gw.example"
merchant_id = "M-2"
store_id = "S-2"
user_id = "refunds"
amount_format = "decimal"

[profiles.prod.auth]
scheme = "Bearer"
key_file = "prod.key"

[profiles.inline]
base_url = "https://gw.example"
merchant_id = "M-3"
store_id = "S-3"
user_id = "u"

[profiles.inline.auth]
scheme = "Basic"
key = "{inline}"
""".replace("{inline}", INLINE_SECRET)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Private HOME / config dir, no WALLETCTL_* variables, a wide non-interactive terminal."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    for name in list(os.environ):
        if name.startswith("WALLETCTL_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(ENV, "stdin_isatty", False)
    monkeypatch.setattr(ENV, "stdout_isatty", False)
    return home


@pytest.fixture
def cfg(isolated: Path) -> Path:
    """The default profiles file with three profiles (0600) and prod's 0600 key file."""
    path = isolated / ".config" / "walletctl" / "profiles.toml"
    path.parent.mkdir(parents=True)
    path.write_text(PROFILES)
    path.chmod(0o600)
    key = path.parent / "prod.key"
    key.write_text(FILE_SECRET + "\n")
    key.chmod(0o600)
    return path


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert lines, result.output
    assert lines[0].startswith("walletctl: error: "), result.stderr
    return lines[0]


# --------------------------------------------------------------------------- list


def test_list_json(cfg: Path) -> None:
    result = run("-o", "json", "profile", "list")
    assert result.exit_code == ExitCode.OK, result.output
    rows = json.loads(result.stdout)
    assert [(r["name"], r["default"]) for r in rows] == [
        ("sandbox", True),
        ("prod", False),
        ("inline", False),
    ]
    assert rows[1] == {
        "name": "prod",
        "default": False,
        "base_url": "https://gw.example",
        "merchant_id": "M-2",
        "store_id": "S-2",
        "auth": "Bearer",
        "environment": "test",
    }


def test_list_json_is_the_default_when_piped(cfg: Path) -> None:
    result = run("profile", "list")
    assert result.exit_code == ExitCode.OK, result.output
    assert len(json.loads(result.stdout)) == 3


def test_list_table(cfg: Path) -> None:
    result = run("-o", "table", "profile", "list")
    assert result.exit_code == ExitCode.OK, result.output
    assert "base url" in result.stdout
    sandbox_line = next(line for line in result.stdout.splitlines() if "sandbox" in line)
    assert "*" in sandbox_line
    assert "http://127.0.0.1:8765" in sandbox_line
    prod_line = next(line for line in result.stdout.splitlines() if " prod " in line)
    assert "*" not in prod_line


def test_list_ndjson_and_csv(cfg: Path) -> None:
    nd = run("-o", "ndjson", "profile", "list")
    assert nd.exit_code == ExitCode.OK, nd.output
    assert [json.loads(line)["name"] for line in nd.stdout.splitlines()] == [
        "sandbox",
        "prod",
        "inline",
    ]
    c = run("-o", "csv", "profile", "list")
    assert c.exit_code == ExitCode.OK, c.output
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    assert rows[0]["name"] == "sandbox"
    assert rows[0]["default"] == "true"
    assert rows[2]["auth"] == "Basic"


def test_list_without_a_file(isolated: Path) -> None:
    result = run("-o", "json", "profile", "list")
    assert result.exit_code == ExitCode.OK, result.output
    assert json.loads(result.stdout) == []
    assert "no profiles yet" in result.stderr
    assert "walletctl profile add" in result.stderr


def test_list_honours_config_flag_and_env(
    cfg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.toml"
    other.write_text(PROFILES.split("[profiles.prod]")[0])
    by_flag = run("--config", str(other), "-o", "json", "profile", "list")
    assert [r["name"] for r in json.loads(by_flag.stdout)] == ["sandbox"], by_flag.output
    monkeypatch.setenv("WALLETCTL_CONFIG", str(other))
    by_env = run("-o", "json", "profile", "list")
    assert [r["name"] for r in json.loads(by_env.stdout)] == ["sandbox"], by_env.output


def test_list_invalid_file_is_a_config_error(cfg: Path) -> None:
    cfg.write_text(PROFILES + "\n[profiles.bad]\nbase_url = 1\n")
    result = run("profile", "list")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "profiles.bad -> " in error_line(result)
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- show


def test_show_default_profile_json(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", ENV_SECRET)
    result = run("-o", "json", "profile", "show")
    assert result.exit_code == ExitCode.OK, result.output
    data = json.loads(result.stdout)
    assert data["name"] == "sandbox"
    assert data["default"] is True
    assert data["auth"]["secret"] == "env WALLETCTL_SANDBOX_KEY (set)"
    assert data["auth"]["service_secret"] == "env WALLETCTL_SERVICE_SECRET (not set)"
    assert data["paths"]["checkout"] == "/api/v5/checkout"
    assert data["currency"] == "EUR"


def test_show_named_profile_table(cfg: Path) -> None:
    result = run("-o", "table", "profile", "show", "prod")
    assert result.exit_code == ExitCode.OK, result.output
    out = result.stdout
    assert "https://gw.example" in out
    assert "Bearer" in out
    assert "file ~/.config/walletctl/prod.key (0600)" in out
    assert "/api/v5/apmTransactions (default)" in out


def test_show_selects_with_profile_flag_and_env(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_flag = run("-p", "prod", "-o", "json", "profile", "show")
    assert json.loads(by_flag.stdout)["name"] == "prod", by_flag.output
    monkeypatch.setenv("WALLETCTL_PROFILE", "inline")
    by_env = run("-o", "json", "profile", "show")
    assert json.loads(by_env.stdout)["name"] == "inline", by_env.output
    assert json.loads(by_env.stdout)["auth"]["secret"] == "inline (file is 0600)"


def test_show_unknown_profile(cfg: Path) -> None:
    result = run("profile", "show", "nope")
    assert result.exit_code == ExitCode.CONFIG, result.output
    line = error_line(result)
    assert "unknown profile 'nope'" in line
    assert "available: sandbox, prod, inline" in line


def test_show_without_file(isolated: Path) -> None:
    result = run("profile", "show")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "no profiles file at" in error_line(result)
    assert "hint: create one with `walletctl profile add" in result.stderr


def test_show_csv(cfg: Path) -> None:
    result = run("-o", "csv", "profile", "show", "prod")
    assert result.exit_code == ExitCode.OK, result.output
    rows = {r["setting"]: r["value"] for r in csv.DictReader(io.StringIO(result.stdout))}
    assert rows["amount_format"] == "decimal"
    assert rows["auth.scheme"] == "Bearer"


# --------------------------------------------------------------------------- add

ADD = (
    "profile", "add", "shop",
    "--base-url", "https://gw.example",
    "--merchant-id", "M-9",
    "--store-id", "S-9",
    "--user-id", "ops",
)  # fmt: skip


@posix_only
def test_add_creates_a_private_file(isolated: Path) -> None:
    result = run(*ADD, "--currency", "jpy", "--timeout", "12", "--amount-format", "decimal")
    assert result.exit_code == ExitCode.OK, result.output
    path = isolated / ".config" / "walletctl" / "profiles.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    pf = profiles_file.load_file(path)
    assert pf.default_profile == "shop"
    p = pf.profiles["shop"]
    assert (p.currency, p.timeout, p.amount_format) == ("JPY", 12.0, "decimal")
    assert p.auth.key_env == "WALLETCTL_SHOP_KEY"  # the default secret source
    assert "$WALLETCTL_SHOP_KEY" in result.stderr
    assert json.loads(result.stdout)["saved"] is True  # piped: the result as JSON


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        (["--key-env", "SHOP_KEY"], lambda a: a.key_env == "SHOP_KEY"),
        (["--keyring"], lambda a: a.keyring is True and a.key_env is None),
        (["--key-file", "~/shop.key"], lambda a: a.key_file == Path.home() / "shop.key"),
        (
            ["--auth-scheme", "header", "--header", "X-Api-Key", "--key-env", "K"],
            lambda a: a.scheme == "header" and a.header == "X-Api-Key",
        ),
        (["--auth-scheme", "Basic", "--username", "svc"], lambda a: a.username == "svc"),
        (["--auth-scheme", "none"], lambda a: a.scheme == "none" and not a.has_source),
    ],
)
def test_add_auth_options(isolated: Path, flags: list[str], check: Any) -> None:
    result = run(*ADD, *flags)
    assert result.exit_code == ExitCode.OK, result.output
    auth = profiles_file.load_profile("shop", None).auth
    assert check(auth), auth


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--key-env", "K", "--keyring"], "--key-env and --keyring are exclusive"),
        (["--amount-format", "cents"], "--amount-format: must be 'minor' or 'decimal'"),
        (["--currency", "EUX"], "--currency: 'EUX' is not an ISO 4217 currency code"),
        (["--timeout", "0"], "--timeout: must be greater than 0"),
        (["--auth-scheme", "Digest"], "--auth-scheme: must be one of"),
        (["--auth-scheme", "header"], "--header: missing"),
        (["--key-env", "not a name"], "--key-env: must be an environment variable name"),
    ],
)
def test_add_bad_flags_are_usage_errors(isolated: Path, flags: list[str], fragment: str) -> None:
    result = run(*ADD, *flags)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert fragment in error_line(result)
    assert not (isolated / ".config" / "walletctl" / "profiles.toml").exists()


def test_add_bad_base_url(isolated: Path) -> None:
    args = list(ADD)
    args[args.index("https://gw.example")] = "gw.example"
    result = run(*args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--base-url: must be an http(s) URL" in error_line(result)


def test_add_bad_name(isolated: Path) -> None:
    args = list(ADD)
    args[2] = "no spaces"
    result = run(*args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "bad profile name" in error_line(result)


def test_add_missing_required_flag(isolated: Path) -> None:
    result = run("profile", "add", "shop", "--base-url", "https://gw.example")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--merchant-id" in result.stderr


def test_add_existing_needs_force(cfg: Path) -> None:
    args = list(ADD)
    args[2] = "prod"
    refused = run(*args)
    assert refused.exit_code == ExitCode.USAGE, refused.output
    assert "profile 'prod' already exists" in error_line(refused)
    assert "--force" in refused.stderr
    replaced = run(*args, "--force", "--default")
    assert replaced.exit_code == ExitCode.OK, replaced.output
    pf = profiles_file.load_file(cfg)
    assert pf.profiles["prod"].merchant_id == "M-9"
    assert pf.default_profile == "prod"
    assert pf.profiles["inline"].auth.key == INLINE_SECRET  # others kept as they were


def test_add_keeps_the_comments_of_a_hand_written_file(cfg: Path) -> None:
    cfg.write_text("# hand-written notes\n" + PROFILES.replace(
        'default_profile = "sandbox"', 'default_profile = "sandbox"  # the one I use'))
    before = cfg.read_text()
    result = run(*ADD)
    assert result.exit_code == ExitCode.OK, result.output
    assert cfg.read_text().startswith(before)
    assert "[profiles.shop]" in cfg.read_text()
    assert not [p for p in cfg.parent.iterdir() if p.suffix in (".bak", ".lock")]


@posix_only
def test_add_refuses_to_touch_an_insecure_file(cfg: Path) -> None:
    cfg.chmod(0o644)
    before = cfg.read_bytes()
    result = run(*ADD)
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "are too open" in error_line(result)
    assert cfg.read_bytes() == before


# --------------------------------------------------------------------------- remove


def test_remove_with_yes(cfg: Path) -> None:
    result = run("profile", "remove", "sandbox", "--yes")
    assert result.exit_code == ExitCode.OK, result.output
    pf = profiles_file.load_file(cfg)
    assert list(pf.profiles) == ["prod", "inline"]
    assert pf.default_profile is None  # the default went with it
    assert "removed profile 'sandbox'" in result.stderr


def test_remove_without_terminal_needs_yes(cfg: Path) -> None:
    before = cfg.read_bytes()
    result = run("profile", "remove", "prod")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "without --yes" in error_line(result)
    assert cfg.read_bytes() == before


def test_remove_asks_on_a_terminal(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ENV, "stdin_isatty", True)
    kept = run("profile", "remove", "prod", input="n\n")
    assert kept.exit_code == ExitCode.OK, kept.output
    assert "prod" in profiles_file.load_file(cfg).profiles
    assert "nothing removed" in kept.stderr
    gone = run("profile", "remove", "prod", input="y\n")
    assert gone.exit_code == ExitCode.OK, gone.output
    assert "prod" not in profiles_file.load_file(cfg).profiles


def test_remove_unknown(cfg: Path) -> None:
    result = run("profile", "remove", "nope", "--yes")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "unknown profile 'nope'" in error_line(result)


def test_remove_without_file(isolated: Path) -> None:
    result = run("profile", "remove", "x", "--yes")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "no profiles file" in error_line(result)


# --------------------------------------------------------------------------- check


def check_lines(result: Result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.strip()]


def test_check_ok(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", ENV_SECRET)
    monkeypatch.setenv("WALLETCTL_SERVICE_SECRET", SERVICE_SECRET)
    result = run("-o", "table", "profile", "check")
    assert result.exit_code == ExitCode.OK, result.output
    lines = check_lines(result)
    assert all(line.startswith(("ok ", "warn ", "     hint: ")) for line in lines), lines
    assert any("secret: found in env WALLETCTL_SANDBOX_KEY" in line for line in lines)
    assert any("auth header: Authorization: PublicApiKey ****" in line for line in lines)
    assert any("service secret: found" in line for line in lines)
    assert any("permissions: 0600" in line for line in lines)


def test_check_missing_secret_fails(cfg: Path) -> None:
    result = run("-o", "table", "profile", "check", "sandbox")
    assert result.exit_code == ExitCode.CONFIG, result.output
    fails = [line for line in check_lines(result) if line.startswith("FAIL")]
    assert any("environment variable WALLETCTL_SANDBOX_KEY is not set" in line for line in fails), (
        fails
    )
    assert "profile check failed" in error_line(result)


def test_check_key_file_profile(cfg: Path) -> None:
    result = run("-o", "json", "profile", "check", "prod")
    assert result.exit_code == ExitCode.OK, result.output
    checks = {r["check"]: r for r in json.loads(result.stdout)}
    assert checks["secret"]["detail"] == "found in file ~/.config/walletctl/prod.key"
    assert checks["auth header"]["detail"] == "Authorization: Bearer ****"


@posix_only
def test_check_reports_open_permissions(cfg: Path) -> None:
    cfg.chmod(0o644)
    result = run("-o", "json", "profile", "check", "inline")
    assert result.exit_code == ExitCode.CONFIG, result.output
    checks = {r["check"]: r for r in json.loads(result.stdout)}
    assert checks["permissions"]["ok"] is False
    assert "0644 is too open" in checks["permissions"]["detail"]
    assert checks["file"]["ok"] is True


@posix_only
def test_check_reports_open_key_file(cfg: Path) -> None:
    (cfg.parent / "prod.key").chmod(0o640)
    result = run("-o", "table", "profile", "check", "prod")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert any(
        line.startswith("FAIL") and "permissions 0640" in line for line in check_lines(result)
    ), result.stdout


def test_check_invalid_file(cfg: Path) -> None:
    cfg.write_text(PROFILES.replace('key_env = "WALLETCTL_SANDBOX_KEY"', 'kee_env = "X"'))
    result = run("-o", "table", "profile", "check")
    assert result.exit_code == ExitCode.CONFIG, result.output
    lines = check_lines(result)
    assert lines[0].startswith("FAIL file: profiles.sandbox -> auth -> kee_env: unknown key")


def test_check_all(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", ENV_SECRET)
    monkeypatch.setenv("WALLETCTL_SERVICE_SECRET", SERVICE_SECRET)
    result = run("-o", "json", "profile", "check", "--all")
    assert result.exit_code == ExitCode.OK, result.output
    rows = json.loads(result.stdout)
    assert {r["profile"] for r in rows if r["profile"]} == {"sandbox", "prod", "inline"}
    assert all(r["ok"] for r in rows)


def test_check_without_file(isolated: Path) -> None:
    result = run("-o", "table", "profile", "check")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert check_lines(result)[0].startswith("FAIL file: no profiles file at")


def test_profile_group_without_command_shows_help() -> None:
    result = run("profile")
    assert result.exit_code == ExitCode.USAGE, result.output
    for command in ("list", "show", "add", "remove", "check"):
        assert command in result.output


# --------------------------------------------------------------------------- secrets never shown


@pytest.mark.parametrize("fmt", ["table", "json", "ndjson", "csv"])
def test_outputs_never_contain_a_secret(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", ENV_SECRET)
    monkeypatch.setenv("WALLETCTL_SERVICE_SECRET", SERVICE_SECRET)
    commands = [
        ["profile", "list"],
        ["profile", "check", "--all"],
        *(["profile", "show", name] for name in ("sandbox", "prod", "inline")),
        *(["profile", "check", name] for name in ("sandbox", "prod", "inline")),
    ]
    for command in commands:
        result = run("-v", "-o", fmt, *command)
        assert result.exit_code == ExitCode.OK, (command, result.output)
        for secret in ALL_SECRETS:
            assert secret not in result.stdout, (command, secret)
            assert secret not in result.stderr, (command, secret)


@posix_only
def test_failures_never_contain_a_secret(cfg: Path) -> None:
    cfg.chmod(0o644)
    (cfg.parent / "prod.key").chmod(0o644)
    (cfg.parent / "prod.key").write_text(FILE_SECRET + "\n" + FILE_SECRET)
    for command in (
        ["profile", "list"],
        ["profile", "show", "inline"],
        ["profile", "check", "--all"],
        ["profile", "check", "prod"],
        ["--debug", "profile", "show", "inline"],
    ):
        result = run("-o", "json", *command)
        assert result.exit_code != ExitCode.OK, (command, result.output)
        text = result.stdout + result.stderr + repr(result.exception)
        for secret in ALL_SECRETS:
            assert secret not in text, (command, secret)


def test_sample_configs_pass_profile_check_with_their_env(monkeypatch: pytest.MonkeyPatch) -> None:
    sample = Path(__file__).resolve().parents[2] / "sample-configs"
    sample = sample / "production-key-env.toml"
    monkeypatch.setenv("PROD_WALLET_API_KEY", ENV_SECRET)
    monkeypatch.setenv("PROD_WALLET_SERVICE_SECRET", SERVICE_SECRET)
    result = run("--config", str(sample), "-o", "table", "profile", "check")
    assert result.exit_code == ExitCode.OK, result.output
    assert ENV_SECRET not in result.output


def test_check_reports_a_header_that_cannot_be_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[profiles.b]\nbase_url = "https://gw.example"\nmerchant_id = "m"\nstore_id = "s"\n'
        'user_id = "a:b"\n[profiles.b.auth]\nscheme = "Basic"\nkey_env = "B_KEY"\n'
    )
    monkeypatch.setenv("B_KEY", ENV_SECRET)
    result = run("--config", str(path), "-o", "json", "profile", "check")
    assert result.exit_code == ExitCode.CONFIG, result.output
    checks = {r["check"]: r for r in json.loads(result.stdout)}
    assert checks["secret"]["ok"] is True
    assert checks["auth header"]["ok"] is False
    assert "must not contain ':'" in checks["auth header"]["detail"]
    assert ENV_SECRET not in result.output


def test_check_scheme_none(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[profiles.open]\nbase_url = "http://127.0.0.1:1"\nmerchant_id = "m"\nstore_id = "s"\n'
        'user_id = "u"\n[profiles.open.auth]\nscheme = "none"\n'
    )
    result = run("--config", str(path), "-o", "json", "profile", "check")
    assert result.exit_code == ExitCode.OK, result.output
    checks = {r["check"]: r for r in json.loads(result.stdout)}
    assert checks["secret"]["detail"] == "none needed (scheme none)"
    shown = run("--config", str(path), "-o", "json", "profile", "show")
    assert json.loads(shown.stdout)["auth"]["secret"] == "none (scheme none)"


@posix_only
def test_add_warns_about_an_open_key_file(isolated: Path) -> None:
    key = isolated / "shop.key"
    key.write_text(FILE_SECRET)
    key.chmod(0o644)
    result = run(*ADD, "--key-file", str(key))
    assert result.exit_code == ExitCode.OK, result.output
    assert f"chmod 600 {key}" in result.stderr
    assert FILE_SECRET not in result.output
