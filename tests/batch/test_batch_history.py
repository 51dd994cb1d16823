"""Each batch row lands in the support desk's history, driven as a user runs it: real
``walletctl`` processes against a real-port sandbox, then ``walletctl history``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_helpers import ledger, seed_preauths, write_profile

from cli_runner import run_walletctl
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb.url


def walletctl(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")  # WALLETCTL_AUDIT_LOG comes from the test's conftest
    return run_walletctl(["--config", str(cfg), "-o", "json", *args], env=env)


def test_every_row_is_one_history_entry(tmp_path: Path, sandbox_url: str) -> None:
    cfg = write_profile(tmp_path, sandbox_url)
    seed_preauths(sandbox_url, ["BH-1", "BH-2", "BH-3", "BH-4"])  # 10.00 EUR each
    src = tmp_path / "rows.csv"
    src.write_text("ref,amount,currency\n"
                   "BH-1,4.00,EUR\n"     # line 2: sent directly, approved
                   "BH-2,10.01,EUR\n"    # line 3: sent directly, refused by the gateway
                   "BH-3,6.00,EUR\n"     # line 4: two rows on BH-3: looked up first, approved
                   "BH-3,6.00,EUR\n"     # line 5: ... and refused by the pre-flight
                   "BH-4,2.50,EUR\n")    # line 6: approved
    done = walletctl(cfg, "capture", "--batch", str(src), "--batch-id", "hist-run-1")
    assert done.returncode == 5, done.stderr  # some rows refused
    listed = walletctl(cfg, "history", "--op", "capture")
    assert listed.returncode == 0, listed.stderr
    entries = {e["batch_row"]: e for e in json.loads(listed.stdout)}
    assert sorted(entries) == [2, 3, 4, 5, 6], entries
    got = {row: (e["original_ref"], e["amount"], e["outcome"], e["batch_id"])
           for row, e in entries.items()}
    assert got == {2: ("BH-1", "4.00", "approved", "hist-run-1"),
                   3: ("BH-2", "10.01", "declined", "hist-run-1"),
                   4: ("BH-3", "6.00", "approved", "hist-run-1"),
                   5: ("BH-3", "6.00", "refused", "hist-run-1"),
                   6: ("BH-4", "2.50", "approved", "hist-run-1")}, got
    sent = {r["reference"] for r in ledger(sandbox_url) if r["kind"] == "capture"}
    approved = {e["new_ref"] for e in entries.values() if e["outcome"] == "approved"}
    assert approved <= sent, (approved, sent)

    # The re-run sends nothing: the one new entry is the pre-flight refusing line 5 again
    # (a refusal is re-checked on every run); the chain stays intact.
    again = walletctl(cfg, "capture", "--batch", str(src), "--batch-id", "hist-run-1",
                      "--resume")
    assert again.returncode == 5, again.stderr
    after = json.loads(walletctl(cfg, "history", "--op", "capture").stdout)
    new = [(e["batch_row"], e["outcome"]) for e in after[len(entries):]]
    assert new == [(5, "refused")], new
    verify = walletctl(cfg, "history", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_dry_run_records_nothing(tmp_path: Path, sandbox_url: str) -> None:
    cfg = write_profile(tmp_path, sandbox_url)
    seed_preauths(sandbox_url, ["BD-1"])
    src = tmp_path / "rows.csv"
    src.write_text("ref,amount,currency\nBD-1,1.00,EUR\n")
    done = walletctl(cfg, "capture", "--batch", str(src), "--dry-run")
    assert done.returncode == 0, done.stderr
    listed = walletctl(cfg, "history", "--op", "capture", "--ref", "BD-1")
    assert json.loads(listed.stdout or "[]") == [], listed.stdout
