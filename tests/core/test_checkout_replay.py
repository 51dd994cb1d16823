"""A repeated identical checkout tells the truth: the sandbox (on a real port) replays the
stored answer with ``X-Sandbox-Replayed: true``, and ``walletctl checkout`` (a real
subprocess) says the checkout already existed, with its state, instead of "created"."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from cli_runner import run_walletctl
from sandbox_fixtures import SANDBOX_API_KEY, TEST_KEY_ENV

ORDER = ("checkout", "--amount", "40", "--ref", "ORDER-2001", "--type", "preauth")


def walletctl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, TEST_KEY_ENV: SANDBOX_API_KEY}
    return run_walletctl(["--config", str(config), "-p", "sandbox", *args], env=env)


def test_a_repeated_checkout_says_it_already_existed(live_sandbox: Any,
                                                     sandbox_profile_file: Path) -> None:
    first = walletctl(sandbox_profile_file, "-o", "table", *ORDER)
    assert first.returncode == 0, first.stderr
    assert "created" in first.stderr, first.stderr
    assert "Send the customer to" in first.stderr, first.stderr
    url = first.stdout.strip()

    # still waiting for the customer: the same link, said to be the existing checkout's
    again = walletctl(sandbox_profile_file, "-o", "table", *ORDER)
    assert again.returncode == 0, again.stderr
    assert "already existed" in again.stderr, again.stderr
    assert "State: Pending" in again.stderr, again.stderr
    assert "created (" not in again.stderr, again.stderr
    assert again.stdout.strip() == url

    approved = httpx.post(f"{live_sandbox.url}/_sandbox/checkouts/ORDER-2001/approve",
                          timeout=30)
    assert approved.status_code == 200, approved.text
    captured = walletctl(sandbox_profile_file, "capture", "ORDER-2001")
    assert captured.returncode == 0, captured.stderr

    # approved and captured: the link is spent, so no "send the customer" and no URL
    late = walletctl(sandbox_profile_file, "-o", "table", *ORDER)
    assert late.returncode == 0, late.stderr
    assert "already existed" in late.stderr, late.stderr
    assert "State: Approved" in late.stderr, late.stderr
    assert "Send the customer" not in late.stderr, late.stderr
    assert late.stdout == "", late.stdout
    assert httpx.get(url, timeout=30).status_code == 410  # why it must not be offered

    doc = json.loads(walletctl(sandbox_profile_file, "-o", "json", *ORDER).stdout)
    assert doc["replayed"] is True, doc
    assert doc["state"] == "Approved", doc
    assert doc["clientSystemTransactionId"] == "ORDER-2001", doc


def test_a_first_checkout_is_not_marked_replayed(sandbox_profile_file: Path) -> None:
    doc = json.loads(walletctl(sandbox_profile_file, "-o", "json", *ORDER).stdout)
    assert "replayed" not in doc, doc
