"""Item 6: editing a profiles file keeps every comment and leaves no stray file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli_runner import run_walletctl
from walletctl.config import profiles_file

HAND_WRITTEN = """\
# Our gateway profiles -- ask ops before changing the prod one.
default_profile = "prod"   # the one support uses

[profiles.prod]
base_url = "https://gateway.example.com"  # production
merchant_id = "ACME-1"     # from the onboarding mail
store_id = "STORE-7"
user_id = "support"

[profiles.prod.auth]
key_env = "PROD_KEY"       # set by the vault agent
"""

ADD = ["profile", "add", "{name}", "--base-url", "https://gw.example", "--merchant-id", "M",
       "--store-id", "S", "--user-id", "u", "--key-env", "K", "--redirect-base",
       "https://shop.example"]


def _walletctl(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env["WALLETCTL_CONFIG"] = str(config)
    return run_walletctl(argv, env=env)  # in-process (tests/cli_runner.py)


def test_add_then_remove_keeps_the_file_byte_for_byte(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    config.write_text(HAND_WRITTEN)
    added = _walletctl(config, *[a.format(name="shop") for a in ADD])
    assert added.returncode == 0, added.stderr
    text = config.read_text()
    assert text.startswith(HAND_WRITTEN), text  # every comment, in place
    assert "[profiles.shop.redirects]" in text
    assert profiles_file.load_file(config).profiles["shop"].redirects["success_url"].endswith("/ok")
    removed = _walletctl(config, "profile", "remove", "shop", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text().rstrip("\n") == HAND_WRITTEN.rstrip("\n")
    assert not [p for p in tmp_path.iterdir() if p.name not in ("home", "profiles.toml")]


def test_replacing_a_profile_keeps_the_other_comments(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    config.write_text(HAND_WRITTEN)
    for _ in range(2):
        out = _walletctl(config, *[a.format(name="shop") for a in ADD], "--force")
        assert out.returncode == 0, out.stderr
    assert config.read_text().startswith(HAND_WRITTEN)
    assert config.read_text().count("[profiles.shop]") == 1


def test_concurrent_adds_all_land_and_leave_no_lock_file(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "profiles.toml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env["WALLETCTL_CONFIG"] = str(config)
    procs = [subprocess.Popen([sys.executable, "-m", "walletctl",
                               *[a.format(name=f"p{i}") for a in ADD]], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL) for i in range(4)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert sorted(profiles_file.load_file(config).profiles) == ["p0", "p1", "p2", "p3"]
    assert [p.name for p in config.parent.iterdir()] == ["profiles.toml"]


def test_an_invalid_edit_leaves_the_file_untouched(tmp_path: Path) -> None:
    config = tmp_path / "profiles.toml"
    config.write_text(HAND_WRITTEN)
    out = _walletctl(config, *[a.format(name="bad") for a in ADD], "--currency", "EURO")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("walletctl: error: --currency:"), out.stderr
    assert config.read_text() == HAND_WRITTEN
