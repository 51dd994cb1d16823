"""A batch exits 0 only when every row of its input was confirmed (issue 46, item 1): a header
or file-level error is fatal whatever --skip-invalid says; a run that skipped rows or sent
nothing exits 4 (VALIDATION), its summary counting what was skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_helpers import ledger, seed_preauths, write_profile
from click.testing import CliRunner

from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb.url


@pytest.fixture
def cfg(tmp_path: Path, sandbox_url: str) -> Path:
    return write_profile(tmp_path, sandbox_url)


def invoke(cfg: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--config", str(cfg), "-o", "json", *args])
    return result.exit_code, result.stdout, result.stderr


def sent(url: str, refs: list[str]) -> int:
    return sum(1 for r in ledger(url) if r["invoiceReference"] in refs
               and r.get("type", "").endswith("capture"))


@pytest.mark.parametrize(
    ("header", "says"),
    [("reference,amount,currency", "unknown column"),
     ("ref;amount;currency", ";-separated"),
     ("amount,currency", "'ref'")],
)
def test_a_header_error_is_fatal_with_skip_invalid(
    tmp_path: Path, cfg: Path, sandbox_url: str, header: str, says: str
) -> None:
    refs = [f"HD-{len(header)}{header[3]}-{i}".replace(";", "s") for i in range(40)]
    seed_preauths(sandbox_url, refs[:2])
    sep = ";" if ";" in header else ","
    src = tmp_path / "in.csv"
    src.write_text(header + "\n" + "".join(f"{r}{sep}1.00{sep}EUR\n" for r in refs))
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid")
    assert code == ExitCode.VALIDATION, (code, out, err)
    assert says in err, err
    assert "nothing was sent" in err
    assert "--skip-invalid" not in err.split("hint:")[-1], err  # not the hint that misleads
    assert sent(sandbox_url, refs) == 0
    assert not (tmp_path / "in.csv.capture.journal").exists()


def test_a_csv_that_stops_reading_is_fatal(tmp_path: Path, cfg: Path, sandbox_url: str) -> None:
    seed_preauths(sandbox_url, ["CE-1", "CE-2"])
    src = tmp_path / "in.csv"
    src.write_text('ref,amount,currency\nCE-1,1.00,EUR\n"CE-x"y,1.00,EUR\nCE-2,1.00,EUR\n')
    code, _out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid")
    assert code == ExitCode.VALIDATION, err
    assert "line 3" in err
    assert "nothing was sent" in err
    assert sent(sandbox_url, ["CE-1", "CE-2"]) == 0


def test_skipped_rows_exit_validation_and_are_counted(
    tmp_path: Path, cfg: Path, sandbox_url: str
) -> None:
    seed_preauths(sandbox_url, ["SK-1", "SK-2"])
    src = tmp_path / "in.csv"
    src.write_text("ref,amount,currency\nSK-1,1.00,EUR\nSK-2,1.001,EUR\nSK-2,2.00,EUR\n")
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid")
    assert code == ExitCode.VALIDATION, (out, err)
    summary = json.loads(out)
    assert summary["confirmed"] == 2, summary
    assert summary["invalid_skipped"] == 1, summary
    assert sent(sandbox_url, ["SK-1", "SK-2"]) == 2
    # the resume of that run still skipped a row of the input: not "every row confirmed"
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid", "--resume")
    assert code == ExitCode.VALIDATION, err


def test_every_row_invalid_jsonl_exits_validation(tmp_path: Path, cfg: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"ref": "JL-1", "amount": "-1"}\n{"ref": "", "amount": "1"}\n')
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid")
    assert code == ExitCode.VALIDATION, (out, err)
    assert "2 invalid rows" in err, err
    assert "nothing was sent" in err, err
    assert not (tmp_path / "in.jsonl.capture.journal").exists()


def test_an_empty_input_sends_nothing_and_says_so(tmp_path: Path, cfg: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("ref,amount,currency\n")
    code, _out, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.VALIDATION, err
    assert "no rows" in err


def test_the_readme_says_what_a_batch_exit_means() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| 4 | VALIDATION"))
    assert "skip" in row, row
    assert "header" in row, row
    ok = next(line for line in readme.splitlines() if line.startswith("| 0 | OK"))
    assert "every row" in ok, ok
    assert "input" in ok, ok


@pytest.mark.parametrize(("width", "said"), [(40, "refused, unknown"),
                                             (70, "elapsed"), (160, None)])
def test_a_progress_bar_says_which_counters_it_dropped(width: int, said: str | None) -> None:
    import io

    from rich.console import Console

    from walletctl.ops.batch.journal import Plan
    from walletctl.render.batch import progress_bar

    buffer = io.StringIO()
    progress, _update = progress_bar(Plan(rows=3), True,
                                     Console(file=buffer, force_terminal=True, width=width))
    with progress:
        pass
    text = " ".join(buffer.getvalue().split())  # the note is wrapped at words to the width
    if said is None:
        assert "hidden at" not in text
    else:
        assert f"(hidden at {width} columns:" in text
        assert said in text
