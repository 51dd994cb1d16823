"""The layers hold: `lint-imports` keeps every contract in pyproject.toml's [tool.importlinter]
(docs/ARCHITECTURE.md draws them), so the suite fails when an import crosses a layer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    # This checkout's src first, whatever walletctl the venv has installed; no cache folder.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout
