"""Fixtures for the reliability tests: walletctl in-process (or a real subprocess), profiles
for a fake gateway or the sandbox on a real port."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_runner import WALLETCTL, run_walletctl

from .fakegw import FakeGateway, Handler

API_KEY = "tk-RELIABILITY-secret-4Zq8Lm2Np"
KEY_ENV = "WALLETCTL_TEST_REL_KEY"


def profile_text(base_url: str, *, timeout: float = 5, extra: str = "") -> str:
    return (
        'default_profile = "rel"\n[profiles.rel]\n'
        f'base_url = "{base_url}"\nmerchant_id = "M-1001"\nstore_id = "S-01"\n'
        f'user_id = "ops-bot"\ncurrency = "EUR"\namount_format = "minor"\ntimeout = {timeout}\n'
        f"{extra}"
        f'[profiles.rel.auth]\nscheme = "PublicApiKey"\nkey_env = "{KEY_ENV}"\n'
        '[profiles.rel.redirects]\nsuccess_url = "https://shop.example/ok"\n'
        'error_url = "https://shop.example/err"\npending_url = "https://shop.example/p"\n'
        'return_url = "https://shop.example/back"\n'
    )


def write_profile(directory: Path, base_url: str, **kw: object) -> Path:
    path = directory / "profiles.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(profile_text(base_url, **kw))  # type: ignore[arg-type]
    return path


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def out(self) -> str:
        return self.stdout + self.stderr


def cli_env(config: Path | None, key: str = API_KEY) -> dict[str, str]:
    env = dict(os.environ)
    env.update({KEY_ENV: key, "COLUMNS": "80", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
    if config is not None:
        env["WALLETCTL_CONFIG"] = str(config)
    return env


def run_cli(config: Path | None, *args: str, stdin: bytes | None = None,
            timeout: float = 60, env: dict[str, str] | None = None,
            process: bool = False) -> Run:
    """``walletctl ARGS`` in this process (:mod:`cli_runner`; stdout/stderr captured: not a
    terminal); ``process=True``: ``python -m walletctl ARGS`` in a subprocess, ended after
    ``timeout`` seconds."""
    if not process:
        done = run_walletctl(args, input=stdin if stdin is not None else b"",
                             env=env or cli_env(config))
        return Run(done.returncode, done.stdout, done.stderr)
    proc = subprocess.run(
        [*WALLETCTL, *args],
        input=stdin if stdin is not None else b"", capture_output=True,
        env=env or cli_env(config), timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))


@pytest.fixture
def gateway() -> Iterator[Callable[[Handler], FakeGateway]]:
    made: list[FakeGateway] = []

    def start(handler: Handler) -> FakeGateway:
        gw = FakeGateway(handler)
        made.append(gw)
        return gw

    yield start
    for gw in made:
        gw.close()
