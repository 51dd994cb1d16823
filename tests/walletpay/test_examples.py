"""The two example merchant sites of docs/testing.md, run against the sandbox as printed.

``examples/walletpay-python`` runs with pytest (walletctl's plugin: ``wallet_sandbox`` and
``wallet_checkout``), ``examples/walletpay-js`` with ``npm install`` + Playwright Test; both pay
with a device-token card and with a PAN_ONLY card through the hosted 3-D Secure check. The
code blocks of docs/testing.md must be those files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from browser_fixtures import find_chromium, skip_loudly

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PACKAGE = ROOT / "packages" / "walletpay-testing"
DOCS = ROOT / "docs" / "testing.md"


def _chromium() -> str:
    path = find_chromium()
    if path is None:
        skip_loudly("no Chromium found (apt-get install chromium; or set WALLETCTL_CHROMIUM)")
    assert path is not None
    return path


def test_the_docs_show_the_example_files_as_they_are() -> None:
    text = DOCS.read_text(encoding="utf-8")
    shown = dict(re.findall(r"<!-- file: (\S+) -->\n```\w+\n(.*?)```", text, re.S))
    files = {str(p.relative_to(ROOT)) for p in EXAMPLES.rglob("*")
             if p.is_file() and p.name != ".gitignore"
             and not {"node_modules", "__pycache__"} & set(p.parts)}
    assert set(shown) == files
    for rel, code in shown.items():
        assert code == (ROOT / rel).read_text(encoding="utf-8"), f"docs/testing.md: {rel} differs"


@pytest.mark.browser
def test_the_python_example_passes(tmp_path: Path) -> None:
    chromium = _chromium()
    shutil.copytree(EXAMPLES / "walletpay-python", tmp_path / "shop")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         f"--wallet-sandbox-chromium={chromium}", "."],
        cwd=tmp_path / "shop", capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout, done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.browser
def test_the_javascript_example_passes(tmp_path: Path, sandbox: Any) -> None:
    npm = shutil.which("npm")
    if npm is None:
        skip_loudly("npm is not installed (apt-get install nodejs npm): the JavaScript "
                     "example (Playwright Test) is not run")
    assert npm is not None
    chromium = _chromium()
    shop = tmp_path / "shop"
    shutil.copytree(EXAMPLES / "walletpay-js", shop)
    # the walletpay-testing package as a merchant gets it: npm pack's tarball (no registry)
    packed = subprocess.run([npm, "pack", "--pack-destination", str(shop)], cwd=PACKAGE,
                            capture_output=True, text=True, timeout=120, check=False)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    assert (shop / "walletpay-testing-0.1.0.tgz").is_file(), packed.stdout
    install = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=shop,
                             capture_output=True, text=True, timeout=300, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {**os.environ, "SANDBOX_URL": sandbox.url, "PORT": str(_free_port()),
           "CHROMIUM": chromium, "CI": "1"}
    done = subprocess.run([npm, "exec", "--", "playwright", "test", "--reporter=line"],
                          cwd=shop, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout, done.stdout


@pytest.mark.slow
@pytest.mark.browser
def test_the_selenium_example_passes(tmp_path: Path) -> None:
    _chromium()
    if shutil.which("chromedriver") is None:
        skip_loudly("chromedriver is not installed (apt-get install chromium-driver): the "
                     "Selenium example is not run")
    try:
        import selenium  # noqa: F401
    except ImportError:
        skip_loudly("selenium is not installed (pip install selenium): the Selenium "
                     "example is not run")
    shop = tmp_path / "shop"
    shutil.copytree(EXAMPLES / "walletpay-selenium", shop)
    shutil.copy(EXAMPLES / "walletpay-python" / "shop.py", shop / "shop.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "."],
        cwd=shop, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout, done.stdout


def test_the_package_carries_the_sandbox_driver() -> None:
    """packages/walletpay-testing ships the sandbox's own driver (scripts/build-driver.js
    copies it before npm pack): the committed copies are that file."""
    served = (ROOT / "src" / "walletctl" / "sandbox" / "static" /
              "walletpay-testing.js").read_text(encoding="utf-8")
    assert (PACKAGE / "walletpay-testing.js").read_text(encoding="utf-8") == served, \
        "run: node packages/walletpay-testing/scripts/build-driver.js"
    as_module = (PACKAGE / "driver.js").read_text(encoding="utf-8")
    expected = "module.exports = " + json.dumps(served, ensure_ascii=False) + ";\n"
    assert as_module.endswith(expected), \
        "run: node packages/walletpay-testing/scripts/build-driver.js"
