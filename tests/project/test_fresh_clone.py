"""A new user's first hour, from a fresh clone: profiles made only with walletctl commands.

The README's tour on a real port (once as real subprocesses, else in-process): a profile
written by ``walletctl sandbox serve --write-profile`` and another made by ``walletctl profile
add`` (every setting from flags), then checkout, approve, capture, refund, lookup, keys,
account and authorize with each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from first_hour_fixtures import Served, wallet_event


def _tour(sb: Served, profile: str, ref: str, tmp_path: Path,
          env: dict[str, str] | None = None, process: bool = False) -> None:
    def run(*argv: str, check: int | None = 0) -> Any:
        return sb.run("-p", profile, *argv, check=check, env=env, process=process)

    out = run("-o", "table", "checkout", "--amount", "40.00", "--ref", ref, "--type", "preauth",
              "--first-name", "Ada", "--last-name", "Lovelace", "--email", "ada@example.com")
    assert "/pay/" in out.stdout
    assert "Approved" in run("-o", "table", "sandbox", "approve", ref).stdout
    capture = run("-o", "table", "capture", ref, "--amount", "15.00").stdout
    assert f"as {ref}-CAP1:" in capture, capture
    assert any(line.strip().endswith("Approved (CapturedByProvider)")
               for line in capture.splitlines()), capture
    refund = run("-o", "table", "refund", ref, "--amount", "5.00", "--yes").stdout
    assert "Approved (RefundedByProvider)" in refund, refund
    records = json.loads(run("-o", "json", "lookup", ref).stdout)
    assert [r["transactionAmount"] for r in records] == ["40.00", "15.00", "5.00"]
    assert "Balance: authorised 40.00 EUR" in run("-o", "table", "lookup", ref).stdout

    keys = json.loads(run("-o", "json", "keys").stdout)
    event = wallet_event(sb, profile, f"{ref}-WP", tmp_path)
    account = json.loads(run("-o", "json", "account", "--event", str(event)).stdout)
    assert "*" in json.dumps(account)  # the card number is masked
    tx = json.loads(run("-o", "json", "authorize", "--event", str(event), "--amount", "12.00",
                        "--currency", "EUR", "--ref", f"{ref}-WP", "--type", "sale",
                        "--yes").stdout)
    assert "Approved" in json.dumps(tx)
    everything = " ".join(json.dumps(x) for x in (records, keys, account, tx))
    assert "sandbox-secret" not in everything


@pytest.mark.slow
def test_served_profile_runs_the_readme_tour(served_sandbox: Served, tmp_path: Path) -> None:
    check = served_sandbox.run("-o", "table", "profile", "check", "--online")
    assert "FAIL" not in check.stdout, check.stdout
    assert "warn" not in check.stdout, check.stdout
    _tour(served_sandbox, "sbx", "ORDER-FRESH-1", tmp_path, process=True)  # real processes


def test_profile_add_alone_makes_a_working_profile(served_sandbox: Served,
                                                   tmp_path: Path) -> None:
    secrets_env = {"SHOP_KEY": "sandbox-api-key", "SHOP_SERVICE_SECRET": "sandbox-secret"}
    served_sandbox.run(
        "profile", "add", "shop", "--base-url", served_sandbox.url, "--merchant-id", "M-1001",
        "--store-id", "S-01", "--user-id", "ops-bot", "--currency", "EUR",
        "--key-env", "SHOP_KEY", "--service-secret-env", "SHOP_SERVICE_SECRET",
        "--redirect-base", "https://shop.example", "--timezone", "Europe/Paris")
    check = served_sandbox.run("-p", "shop", "-o", "json", "profile", "check", "--online",
                               env=secrets_env)
    rows = json.loads(check.stdout)
    assert all(r["ok"] and not r["warning"] for r in rows), rows
    assert any(r["check"] == "online" for r in rows)
    _tour(served_sandbox, "shop", "ORDER-FRESH-2", tmp_path, env=secrets_env)


def test_a_profile_without_redirects_or_service_secret_says_so(served_sandbox: Served) -> None:
    add = served_sandbox.run(
        "profile", "add", "bare", "--base-url", served_sandbox.url, "--merchant-id", "M-1001",
        "--store-id", "S-01", "--user-id", "ops-bot", "--key-env", "BARE_KEY")
    assert "checkout needs redirect URLs" in add.stderr
    assert "profile set bare auth.service_secret_env VAR" in add.stderr
    check = served_sandbox.run("-p", "bare", "-o", "table", "profile", "check",
                               env={"BARE_KEY": "sandbox-api-key"})
    lines = check.stdout.splitlines()
    assert any(line.startswith("warn bare: checkout: needs --success-url") for line in lines)
    assert any(line.startswith("warn bare: keys:") for line in lines)


def test_a_profile_added_without_a_currency_says_so(served_sandbox: Served) -> None:
    """Not on a terminal nothing is asked: the profile is saved without a default currency,
    profile add says what that means, and checkout then names the flag (exit 2, not 4)."""
    add = served_sandbox.run(
        "profile", "add", "nocur", "--base-url", served_sandbox.url, "--merchant-id", "M-1001",
        "--store-id", "S-01", "--user-id", "ops-bot", "--key-env", "NOCUR_KEY",
        "--redirect-base", "https://shop.example")
    assert ("walletctl: no default currency: checkout and authorize need --currency on each "
            "call; `walletctl profile set nocur currency EUR`") in add.stderr.splitlines(), \
        add.stderr
    assert "Default currency" not in add.stderr  # no prompt without a terminal
    env = {"NOCUR_KEY": "sandbox-api-key"}
    out = served_sandbox.run("-p", "nocur", "checkout", "--amount", "1.00", "--ref",
                             "ORDER-NOCUR-1", check=2, env=env)
    assert out.stderr.startswith("walletctl: error: checkout: missing option --currency "
                                 "(required: profile 'nocur' has no default currency)")
    served_sandbox.run("-p", "nocur", "checkout", "--amount", "1.00", "--ref", "ORDER-NOCUR-1",
                       "--currency", "EUR", env=env)


@pytest.mark.parametrize("missing", ["--base-url", "--user-id"])
def test_profile_add_without_a_terminal_names_missing_flags(served_sandbox: Served,
                                                           missing: str) -> None:
    argv = {"--base-url": served_sandbox.url, "--merchant-id": "M", "--store-id": "S",
            "--user-id": "u"}
    del argv[missing]
    flags = [x for kv in argv.items() for x in kv]
    out = served_sandbox.run("profile", "add", "x", *flags, check=2)
    assert out.stderr.startswith(f"walletctl: error: profile add: missing {missing}"), out.stderr
