"""docs/walletpay.md's examples, run as printed against a real ``walletctl sandbox serve``
(a subprocess on a real port): the Card-account recipe for ``walletctl sandbox 3ds``, and
the ``/walletpay.js`` sizes and ``content-length`` the page shows."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import walletctl
from first_hour_fixtures import Served

DOC = Path(__file__).resolve().parents[2] / "docs" / "walletpay.md"
DOC_URL = "http://127.0.0.1:8731"
# The sizes in the doc may lag a small edit of walletpay.js, not a large one.
TOLERANCE = 0.05


def test_the_card_account_recipe_runs_as_printed(served_sandbox: Served,
                                                 tmp_path: Path) -> None:
    for program in ("curl", "jq"):
        if shutil.which(program) is None:
            pytest.skip(f"LOUD SKIP: {program} is not installed, so docs/walletpay.md's "
                        "Card-account recipe is untested here (.ci/run installs it)")
    found = re.search(r"```sh\n(SB=.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found, "docs/walletpay.md: the Card-account recipe (```sh, SB=...) is gone"
    recipe = found.group(1)
    assert DOC_URL in recipe, recipe
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "walletctl"  # this tree's walletctl, as the recipe calls it
    source = Path(walletctl.__file__).resolve().parents[1]
    shim.write_text(f"#!/bin/sh\nPYTHONPATH='{source}' exec '{sys.executable}' -m walletctl "
                    '"$@"\n')
    shim.chmod(0o755)
    env = {**served_sandbox.env, "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"}
    run = subprocess.run(["bash", "-euo", "pipefail", "-c",
                          recipe.replace(DOC_URL, served_sandbox.url)],
                         capture_output=True, text=True, env=env, timeout=60, check=False)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert re.match(r"3DS passed for ta_\w+: transStatus Y, eci 05", run.stdout), run.stdout


def test_the_walletpay_js_sizes_in_the_doc_are_the_served_ones(served_sandbox: Served) -> None:
    text = DOC.read_text(encoding="utf-8")
    with httpx.Client(base_url=served_sandbox.url, timeout=30) as client:
        plain = client.get("/walletpay.js", headers={"Accept-Encoding": "identity"})
        with client.stream("GET", "/walletpay.js",
                           headers={"Accept-Encoding": "gzip"}) as zipped:
            gzipped = len(b"".join(zipped.iter_raw()))
    real = {"plain": len(plain.content), "gzipped": gzipped}
    measured = re.search(r"Measured: ([\d,]+) bytes,\s+([\d,]+) bytes gzipped", text)
    assert measured, "docs/walletpay.md: the 'Measured: N bytes, M bytes gzipped' line is gone"
    shown = re.search(r"walletpay\.js\n(?:[^`]*\n)*?content-length: (\d+)\n", text)
    assert shown, "docs/walletpay.md: the curl example's content-length is gone"
    for what, printed, size in (
            ("plain size", measured.group(1), real["plain"]),
            ("gzipped size", measured.group(2), real["gzipped"]),
            ("curl example's content-length", shown.group(1), real["gzipped"])):
        number = int(printed.replace(",", ""))
        assert abs(number - size) <= TOLERANCE * size, (
            f"docs/walletpay.md: the {what} reads {printed}, /walletpay.js is {size} bytes "
            "now: paste the real numbers")
