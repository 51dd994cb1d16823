"""httpx, imported without its command-line module.

``import httpx`` also imports ``httpx._main`` (its own CLI), and with it click, Rich and
Pygments whenever those are installed: about 40 ms of every ``walletctl lookup`` here, for
code walletctl never runs. Registering a stub under that name first skips it; the stub's
``main`` explains itself if anything ever calls it.
"""

from __future__ import annotations

import sys
import types
from typing import NoReturn


def _httpx_cli_unavailable(*_args: object, **_kwargs: object) -> NoReturn:
    raise SystemExit("httpx's command-line interface is not loaded inside walletctl")


if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    _stub = types.ModuleType("httpx._main")
    _stub.main = _httpx_cli_unavailable  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = _stub

import httpx  # noqa: E402

__all__ = ["httpx"]
