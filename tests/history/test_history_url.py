"""Where a shared history is named (``[history] url``, ``WALLETCTL_HISTORY_URL``) and the
rules that keep a password out of both: one-line errors naming the field and the rule."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_runner import run_walletctl
from walletctl.config.dburl import DbUrlError, parse_db_url

SECRET = "hunter2-xyz"


@pytest.mark.parametrize(("url", "display"), [
    ("postgresql://alice@db.example:5432/desk", "postgresql://alice@db.example:5432/desk"),
    ("postgres://alice@db.example/desk?sslmode=verify-full",
     "postgresql://alice@db.example/desk"),
    ("postgresql://alice@[::1]:6543/desk", "postgresql://alice@::1:6543/desk"),
])
def test_good_urls_and_how_messages_name_them(url: str, display: str) -> None:
    assert parse_db_url(url).display() == display


@pytest.mark.parametrize(("url", "rule"), [
    (f"postgresql://alice:{SECRET}@db/desk", "must not contain a password"),
    (f"postgresql://alice@db/desk?password={SECRET}", "must not contain a password"),
    ("mysql://alice@db/desk", "must start with postgresql://"),
    ("postgresql://alice@db:99999/desk", "the port a number"),
    ("postgresql://alice@db/", "must name a database"),
    ("postgresql://alice@db/desk?options=-csearch_path%3Devil", "is not one walletctl passes"),
    ("postgresql://alice@db/desk\n", "must be a URL such as"),
])
def test_bad_urls_name_the_rule_and_never_the_secret(url: str, rule: str) -> None:
    with pytest.raises(DbUrlError) as caught:
        parse_db_url(url.strip() if "\n" not in url else url.replace("\n", "\x00"))
    text = str(caught.value)
    assert SECRET not in text
    if "must be a URL" not in rule:
        assert rule in text


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    proc = run_walletctl(argv, env=env)  # in-process (tests/cli_runner.py)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(HOME=str(tmp_path), WALLETCTL_CONFIG=str(tmp_path / "profiles.toml"), **extra)
    return env


def test_a_profile_url_with_a_password_is_a_profile_error(tmp_path: Path) -> None:
    (tmp_path / "profiles.toml").write_text(
        'default_profile = "desk"\n[profiles.desk]\nbase_url = "http://127.0.0.1:9"\n'
        'merchant_id = "M"\nstore_id = "S"\nuser_id = "u"\n'
        '[profiles.desk.auth]\nscheme = "PublicApiKey"\nkey_env = "K"\n'
        f'[profiles.desk.history]\nurl = "postgresql://alice:{SECRET}@db/desk"\n')
    os.chmod(tmp_path / "profiles.toml", 0o600)
    proc = _cli(_env(tmp_path), "history")
    assert proc.returncode == 3
    assert "history -> url: must not contain a password" in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout


def test_a_local_file_and_a_database_at_once_are_refused(tmp_path: Path) -> None:
    env = _env(tmp_path, WALLETCTL_AUDIT_LOG=str(tmp_path / "h.sqlite3"),
               WALLETCTL_HISTORY_URL="postgresql://alice@127.0.0.1:9/desk")
    proc = _cli(env, "history", "--path")
    assert proc.returncode == 3
    assert "WALLETCTL_AUDIT_LOG names a local file while the history is the database" \
        in proc.stderr


def test_history_path_names_the_database_without_a_password(tmp_path: Path) -> None:
    env = _env(tmp_path, WALLETCTL_HISTORY_URL="postgresql://alice@db.example:5433/desk")
    proc = _cli(env, "history", "--path")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "postgresql://alice@db.example:5433/desk"


def test_grant_on_a_local_file_is_a_usage_error(tmp_path: Path) -> None:
    env = _env(tmp_path, WALLETCTL_AUDIT_LOG=str(tmp_path / "h.sqlite3"))
    proc = _cli(env, "history", "setup", "--grant", "alice")
    assert proc.returncode == 2
    assert "a local history file has no roles" in proc.stderr
    made = _cli(env, "-o", "json", "history", "setup")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "h.sqlite3").exists()


def test_libpq_waits_default_and_bounded_by_the_url() -> None:
    defaults = parse_db_url("postgresql://alice@db/desk").libpq_waits()
    assert defaults == {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 10,
                        "keepalives_interval": 5, "keepalives_count": 3,
                        "tcp_user_timeout": 15000}
    tuned = parse_db_url("postgresql://alice@db/desk?connect_timeout=60&keepalives=1&"
                         "keepalives_idle=1&keepalives_interval=60&keepalives_count=20&"
                         "tcp_user_timeout=1000").libpq_waits()
    assert tuned == {"connect_timeout": 60, "keepalives": 1, "keepalives_idle": 1,
                     "keepalives_interval": 60, "keepalives_count": 20,
                     "tcp_user_timeout": 1000}


@pytest.mark.parametrize(("param", "rule"), [
    ("connect_timeout=0", "connect_timeout='0': must be a whole number from 2 to 60 s"),
    ("connect_timeout=61", "connect_timeout='61': must be a whole number from 2 to 60 s"),
    ("keepalives=0", "keepalives='0': must be 1"),
    ("keepalives_idle=301", "keepalives_idle='301': must be a whole number from 1 to 300 s"),
    ("keepalives_interval=0", "keepalives_interval='0': must be a whole number from 1 to 60"),
    ("keepalives_count=21", "keepalives_count='21': must be a whole number from 1 to 20"),
    ("tcp_user_timeout=0", "tcp_user_timeout='0': must be a whole number from 1000 to "
                           "120000 ms"),
    ("tcp_user_timeout=-5", "tcp_user_timeout='-5': must be a whole number"),
    ("keepalives_idle=1e3", "keepalives_idle='1e3': must be a whole number"),
    ("connect_timeout=", "connect_timeout='': must be a whole number"),
])
def test_libpq_waits_out_of_bounds_are_one_line_naming_the_parameter(param: str,
                                                                     rule: str) -> None:
    with pytest.raises(DbUrlError) as caught:
        parse_db_url(f"postgresql://alice@db/desk?sslmode=require&{param}")
    text = str(caught.value)
    assert text.startswith(f"parameter {rule}"), text
    assert "\n" not in text


def test_an_unbounded_wait_in_the_url_is_refused_before_connecting(tmp_path: Path) -> None:
    env = _env(tmp_path, WALLETCTL_HISTORY_URL="postgresql://alice@127.0.0.1:9/desk"
                                                "?tcp_user_timeout=0")
    proc = _cli(env, "history")
    assert proc.returncode == 3, proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert "tcp_user_timeout='0': must be a whole number from 1000 to 120000 ms" in first
    assert "cannot connect" not in proc.stderr
