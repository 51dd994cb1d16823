"""Item 10: the repository stands alone. README, docs, code and hints name only files that
ship; the API is documented in the repo; CI snippets install walletctl in a way that works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("../shared", "shared/spec", "DESIGN.md")


def _texts() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "src").rglob("*.toml"))
    return files


def test_nothing_points_outside_the_product() -> None:
    found = [f"{path.relative_to(ROOT)}: {word}" for path in _texts()
             for word in FORBIDDEN if word in path.read_text(encoding="utf-8")]
    assert not found, found


def test_every_relative_link_in_the_docs_exists() -> None:
    missing = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        # code blocks are code, not links (`f[a[0]](...a[1])` in a JavaScript example)
        prose = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):
            if not (path.parent / target).exists():
                missing.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not missing, missing


def test_the_gateway_api_is_documented_in_the_repo() -> None:
    text = (ROOT / "docs" / "gateway-api.md").read_text()
    for needed in ("/api/v5/checkout", "/api/v5/apmTransactions", "/api/v5/publicKeys",
                   "/api/v5/paymentAccounts", "/api/v5/transactions", "Settled",
                   "amount_format", "PublicApiKey"):
        assert needed in text, needed


def test_pip_installs_name_a_path_or_a_vcs_url() -> None:
    """`pip install walletctl` fails: no package index serves that name."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    paths += sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "src").rglob("*.toml"))
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            for rest in re.findall(r"pip install((?:\s+-[-\w]+)*\s+\S+)", line):
                spec = rest.split()[-1].strip("'\"`")
                assert not spec.startswith("walletctl") or "@ git+" in line, (
                    f"{path.relative_to(ROOT)}: {line.strip()}")


def test_the_sample_profiles_stand_at_the_top_of_the_repository() -> None:
    examples = ROOT / "sample-configs"
    assert (examples / "reference.toml").exists()


def _console_commands(path: Path) -> list[str]:
    """The ``$ `` lines of a page's console/shell blocks (with their ``\\`` continuation
    lines): what a reader copies and pastes."""
    lines: list[str] = []
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside and line[3:].strip() in ("console", "sh", "bash", "shell")
        elif inside and lines and lines[-1].endswith("\\"):  # a command continued
            lines[-1] = lines[-1][:-1] + line
        elif inside and line.startswith("$ "):
            lines.append(line[2:])
    return lines


def test_every_console_line_pastes_into_an_interactive_zsh() -> None:
    """zsh (macOS's default shell) treats ``#`` as a word at its prompt unless
    INTERACTIVE_COMMENTS is set, and an apostrophe opens a quote: a trailing ``# comment``
    on a command a reader pastes becomes arguments, or leaves the shell at ``quote>``."""
    broken = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in _console_commands(path):
            try:
                words = shlex.split(line, comments=False)
            except ValueError:
                words = ["#unbalanced quote"]
            if any(word.startswith("#") for word in words):
                broken.append(f"{path.relative_to(ROOT)}: {line}")
    assert not broken, "\n".join(broken)
