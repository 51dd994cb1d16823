"""One headless Chromium (driven by Playwright) per test module, for every browser test; each
test works in a browser context of its own (its own cookies, storage and pages). Without a
Chromium binary or Playwright, the tests that ask for it are skipped with a loud reason.

Not one per test process, though a launch costs about 0.8 s of CPU: Playwright's sync API
leaves its event loop marked running in the thread while it is open, and the walletctl
commands the other modules run in-process (``asyncio.run`` in a batch) then fail with
RuntimeError. Closing it at the end of each module gives the thread back.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    for candidate in (os.environ.get("WALLETCTL_CHROMIUM"), shutil.which("chromium"),
                      shutil.which("chromium-browser"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def skip_loudly(reason: str) -> None:
    message = f"BROWSER TESTS SKIPPED: {reason}"
    sys.stderr.write(f"\n*** {message} ***\n")
    pytest.skip(message)


@pytest.fixture(scope="module")
def pw() -> Iterator[Any]:
    """Playwright itself (for its device profiles: ``pw.devices["Pixel 5"]``)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_loudly("playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(pw: Any) -> Iterator[Any]:
    executable = find_chromium()
    if executable is None:
        skip_loudly("no Chromium found (apt-get install chromium; or set WALLETCTL_CHROMIUM)")
    b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    yield b
    b.close()
