"""The registry of output formats (``render/formats/``): a new format is one module.

The format docs/ARCHITECTURE.md shows as its example (tab-separated values) is registered
here as it is written there, and existing commands' views come out in it through ``-o``
without a change anywhere else; the render modules name no format of their own."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runner import run_walletctl
from walletctl.constants import ExitCode
from walletctl.render import formats

ROOT = Path(__file__).resolve().parents[2]
RENDER = ROOT / "src" / "walletctl" / "render"


def _example() -> str:
    """The python block of docs/ARCHITECTURE.md's "Output formats"."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = doc.split("**Output formats**", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "docs/ARCHITECTURE.md: no example of a format"
    return "\n".join(line.removeprefix("  ") for line in block.group(1).splitlines())


@pytest.fixture
def tsv() -> Iterator[str]:
    """The documented example, registered as one module would register it."""
    exec(compile(_example(), "ARCHITECTURE.md", "exec"), {})  # noqa: S102
    try:
        yield "tsv"
    finally:
        formats.unregister("tsv")


def test_the_builtin_formats_come_from_the_registry() -> None:
    assert formats.names() == ("table", "json", "ndjson", "csv")
    assert [formats.shape(n) for n in formats.names()] == ["table", "document", "lines",
                                                           "flat"]
    with pytest.raises(ValueError, match="registered already"):
        formats.register(formats.get("csv"))


def test_a_new_format_is_one_module(tsv: str) -> None:
    assert tsv in formats.names()
    values = run_walletctl(["-o", tsv, "sandbox", "values"])
    assert values.returncode == ExitCode.OK, values.stderr
    rows = list(csv.DictReader(io.StringIO(values.stdout), delimiter="\t"))
    assert rows[0] == {"lastTwoDigits": "01", "outcome": rows[0]["outcome"]}, rows[0]
    assert rows[-1] == {"lastTwoDigits": "other", "outcome": "approved normally"}
    listed = run_walletctl(["-o", tsv, "smoke", "--list"])
    assert listed.returncode == ExitCode.OK, listed.stderr
    assert listed.stdout.startswith("name\tdescription\tsteps\n"), listed.stdout
    first = next(csv.DictReader(io.StringIO(listed.stdout), delimiter="\t"))
    assert first["name"] == "redirect-sale", first
    assert json.loads(first["steps"])[0] == "checkout", first


def test_an_unregistered_format_is_refused() -> None:
    result = run_walletctl(["-o", "tsv", "sandbox", "values"])
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert "must be one of table, json, ndjson, csv" in result.stderr


def test_render_modules_name_no_data_format() -> None:
    """Outside render/formats/, a view declares what it shows; no module compares the format
    asked for with a data format's name (a table is the one shape a view may check)."""
    compare = re.compile(r"""(==|!=|\bin)\s*\(?\s*["'](json|ndjson|csv)["']""")
    found = [f"{path.name}:{n}: {line.strip()}"
             for path in sorted(RENDER.glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if compare.search(line)]
    assert not found, found
