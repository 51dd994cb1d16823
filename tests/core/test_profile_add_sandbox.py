"""``profile add`` against a running sandbox (``sandbox serve`` on a real port, every command a
real subprocess): the profile works for every command, ``smoke`` and ``keys`` included; a
service secret the public key service refuses is named, with the command that sets its
source, by ``keys``, ``smoke`` and ``profile check --online``.
"""

from __future__ import annotations

import json

from first_hour_fixtures import Served
from walletctl.constants import ExitCode


def test_a_profile_added_against_a_sandbox_works_for_smoke_and_keys(
        served_sandbox: Served) -> None:
    sb = served_sandbox
    added = sb.run("profile", "add", "desk", "--base-url", sb.url)
    assert "is a walletctl sandbox" in added.stderr, added.stderr
    assert "public key service's secret" in added.stderr
    keys = json.loads(sb.run("-p", "desk", "-o", "json", "keys").stdout)
    assert keys["encryptionKeyId"]
    smoke = sb.run("-p", "desk", "smoke", "--json")
    assert all(s["status"] == "passed" for s in json.loads(smoke.stdout)["scenarios"])
    check = sb.run("-p", "desk", "-o", "json", "profile", "check", "--online")
    results = {r["check"]: r for r in json.loads(check.stdout)}
    assert results["online keys"]["ok"], results["online keys"]


def test_a_refused_service_secret_is_named_with_the_command_that_sets_it(
        served_sandbox: Served) -> None:
    sb = served_sandbox
    env = {"DESK_KEY": "sandbox-api-key", "DESK_SECRET": "not-the-sandbox-secret"}
    sb.run("profile", "add", "desk", "--base-url", sb.url, "--merchant-id", "M-1001",
           "--store-id", "S-01", "--user-id", "ops-bot", "--currency", "EUR",
           "--redirect-base", "https://shop.example", "--key-env", "DESK_KEY",
           "--service-secret-env", "DESK_SECRET", env=env)
    # the options as the user typed them: --config carried into the hint; -p not (the
    # command names the profile)
    typed = ("--config", str(sb.config), "-p", "desk")
    fix = f"`walletctl profile set desk auth.service_secret_env VAR --config {sb.config}`"
    keys = sb.run(*typed, "keys", env=env, check=ExitCode.AUTH)
    assert "the public key service refused user 'ops-bot'" in keys.stderr, keys.stderr
    assert "$DESK_SECRET" in keys.stderr
    assert fix in keys.stderr.replace("\n", " "), keys.stderr
    # the check proves it before any real command does
    check = sb.run(*typed, "-o", "table", "profile", "check", "--online", env=env,
                   check=ExitCode.AUTH)
    assert "FAIL desk: online keys" in check.stdout, check.stdout
    assert fix in check.stderr, check.stderr
    # smoke: the hint is the service secret's; the reason once, "not run" after it
    smoke = sb.run(*typed, "smoke", "-s", "browser-wallet", env=env, check=ExitCode.AUTH)
    assert fix in smoke.stderr, smoke.stderr
    assert "run aborted (" not in smoke.stderr, smoke.stderr
    assert smoke.stderr.count("service user or secret is not valid") == 2, smoke.stderr  # step, end
    assert smoke.stderr.count("not run: run aborted") == 7, smoke.stderr
