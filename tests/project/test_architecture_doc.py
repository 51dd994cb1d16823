"""docs/ARCHITECTURE.md stays a true map: every path it names (in `backticks`) exists, and
every package of walletctl (every folder under src/walletctl with an __init__.py) is in it.

A path is resolved from the repository's root when its first part is there (`tests/...`,
`pyproject.toml`), else under src/walletctl (`ops/money/`, `cli/main.py`, `errors.py`).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "walletctl"
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _named_paths(text: str) -> list[str]:
    """The code spans that are paths: with a slash, or a file name ending in .py/.md/.toml."""
    spans = re.findall(r"`([^`\s]+)`", text)
    return [span for span in spans
            if re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", span)
            and ("/" in span or span.endswith((".py", ".md", ".toml")))]


def _where(path: str) -> Path:
    path = path.removeprefix("walletctl/")
    if (ROOT / path.split("/")[0]).exists():
        return ROOT / path
    return PACKAGE / path


def test_every_path_the_map_names_exists() -> None:
    named = _named_paths(DOC.read_text(encoding="utf-8"))
    assert "cli/main.py" in named, named  # the reading works
    missing = [path for path in named if not _where(path).exists()]
    assert not missing, f"docs/ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_package_is_on_the_map() -> None:
    named = {path.removeprefix("walletctl/").rstrip("/")
             for path in _named_paths(DOC.read_text(encoding="utf-8"))}
    packages = sorted(init.parent.relative_to(PACKAGE).as_posix()
                      for init in PACKAGE.rglob("__init__.py") if init.parent != PACKAGE)
    assert "ops/money" in packages, packages
    absent = [package for package in packages if package not in named]
    assert not absent, f"packages docs/ARCHITECTURE.md does not describe: {absent}"
