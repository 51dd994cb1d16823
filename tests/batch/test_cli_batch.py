"""`walletctl capture|refund|reverse --batch` through the real app against a real-port sandbox:
exit codes, dry run, results files, resume, confirmation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from batch_helpers import ledger, seed_preauths, write_profile
from click.testing import CliRunner

from timescale import scaled
from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.ops.batch.job import exit_code as _exit_code
from walletctl.ops.batch.runner import RunReport
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb.url


@pytest.fixture
def cfg(tmp_path: Path, sandbox_url: str) -> Path:
    return write_profile(tmp_path, sandbox_url)


def invoke(cfg: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(app, ["--config", str(cfg), "-o", "json", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def csv_file(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("ref,amount,currency\n" + "".join(f"{r},{a},EUR\n" for r, a in rows))
    return path


def follow_ups(url: str, refs: list[str]) -> list[dict[str, object]]:
    return [r for r in ledger(url) if r["invoiceReference"] in refs]


def test_all_confirmed_then_rerun_sends_nothing(
    tmp_path: Path, cfg: Path, sandbox_url: str
) -> None:
    refs = [f"OK-{i}" for i in range(12)]
    seed_preauths(sandbox_url, refs)
    src = csv_file(tmp_path / "in.csv", [(r, "3.00") for r in refs])
    results = tmp_path / "out.ndjson"
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--results", str(results))
    assert code == ExitCode.OK, err
    summary = json.loads(out)
    assert summary["confirmed"] == 12
    assert summary["confirmed_totals"] == {"EUR": "36.00"}
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    assert sorted(x["line"] for x in lines) == list(range(2, 14))
    assert all(x["status"] == "confirmed" and x["transaction_id"] for x in lines)
    assert (tmp_path / "in.csv.capture.journal").exists()
    applied = follow_ups(sandbox_url, refs)
    assert len(applied) == 12

    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--resume",
                            "--results", str(tmp_path / "again.csv"))
    assert code == ExitCode.OK, err
    assert json.loads(out)["earlier_run"] == 12
    assert "already done" in err
    assert len(follow_ups(sandbox_url, refs)) == 12
    rows = (tmp_path / "again.csv").read_text().splitlines()
    assert rows[0].startswith("line,op,ref,new_ref")
    assert len(rows) == 13


def test_refused_rows_exit_declined(tmp_path: Path, cfg: Path, sandbox_url: str) -> None:
    seed_preauths(sandbox_url, ["RF-1", "RF-2"])
    src = csv_file(tmp_path / "in.csv", [("RF-1", "10.00"), ("RF-2", "10.01"), ("RF-X", "1.00")])
    code, out, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.DECLINED, (out, err)
    assert json.loads(out)["refused"] == 2
    assert len(follow_ups(sandbox_url, ["RF-1", "RF-2"])) == 1


def test_invalid_rows_send_nothing(tmp_path: Path, cfg: Path, sandbox_url: str) -> None:
    seed_preauths(sandbox_url, ["IV-1"])
    src = tmp_path / "in.csv"
    src.write_text("ref,amount,currency\nIV-1,1.00,EUR\nIV-2,1.001,EUR\n")
    code, _, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.VALIDATION, err
    assert "line 3: amount: EUR amounts have 2 decimal places" in err
    assert "nothing was sent" in err
    assert "Traceback" not in err
    assert follow_ups(sandbox_url, ["IV-1"]) == []
    assert not (tmp_path / "in.csv.capture.journal").exists()

    code, _out, err = invoke(cfg, "capture", "--batch", str(src), "--skip-invalid")
    assert code == ExitCode.VALIDATION, err  # a row of the input was skipped: not all done
    assert "skipped invalid line 3: amount" in err
    assert len(follow_ups(sandbox_url, ["IV-1"])) == 1


def test_dry_run_prints_requests_and_sends_nothing(
    tmp_path: Path, cfg: Path, sandbox_url: str
) -> None:
    src = csv_file(tmp_path / "in.csv", [("DR-1", "2.50"), ("DR-2", "1.00")])
    # offline: validation only; every row would be sent
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--dry-run", "--offline")
    assert code == ExitCode.OK, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["status"] for x in lines] == ["would-send", "would-send"]
    body = lines[0]["request"]
    assert body["type"] == "ecom.capture"
    assert body["amount"] == "250"
    assert body["clientSystemInvoiceId"] == "DR-1"
    assert body["clientSystemTransactionId"] == lines[0]["new_ref"]
    assert body["apmDetails"] == {"apmProvider": "WalletV2"}
    # checked (the default): the same read-only pre-flight as the real run
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--dry-run")
    assert code == ExitCode.OK, err
    checked = [json.loads(x) for x in out.splitlines()]
    assert [x["status"] for x in checked] == ["would-refuse", "would-refuse"]
    assert "no sale or pre-authorisation" in checked[0]["reason"]
    assert "line 2: DR-1: would-refuse: pre-flight:" in err
    assert follow_ups(sandbox_url, ["DR-1", "DR-2"]) == []
    assert not (tmp_path / "in.csv.capture.journal").exists()
    # the real run uses exactly the references the dry run showed
    seed_preauths(sandbox_url, ["DR-1", "DR-2"])
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--dry-run")
    assert [json.loads(x)["status"] for x in out.splitlines()] == ["would-send"] * 2
    code, _, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.OK, err
    sent = {r["reference"] for r in follow_ups(sandbox_url, ["DR-1", "DR-2"])}
    assert sent == {x["new_ref"] for x in lines}


def test_dry_run_predicts_the_real_runs_refusals(
    tmp_path: Path, cfg: Path, sandbox_url: str
) -> None:
    seed_preauths(sandbox_url, ["DP-1", "DP-2"])  # 10.00 EUR each
    cap = csv_file(tmp_path / "cap.csv", [("DP-1", "6.00"), ("DP-1", "5.00"), ("DP-2", "10.00")])
    code, out, err = invoke(cfg, "capture", "--batch", str(cap), "--dry-run")
    assert code == ExitCode.OK, err
    predicted = [json.loads(x)["status"] for x in out.splitlines()]
    assert predicted == ["would-send", "would-refuse", "would-send"]
    code, _, err = invoke(cfg, "capture", "--batch", str(cap), "--results",
                          str(tmp_path / "r.ndjson"))
    assert code == ExitCode.DECLINED, err
    real = {r["line"]: r["status"] for r in map(json.loads,
                                                 (tmp_path / "r.ndjson").read_text().splitlines())}
    assert [real[n] for n in (2, 3, 4)] == ["confirmed", "refused", "confirmed"]
    assert "line 3: DP-1: refused: pre-flight:" in err  # named on stderr without --results
    # a reversal of a captured pre-authorisation: predicted, then refused for real
    rev = csv_file(tmp_path / "rev.csv", [("DP-2", "10.00")])
    code, out, err = invoke(cfg, "reverse", "--batch", str(rev), "--dry-run")
    assert json.loads(out.splitlines()[0])["status"] == "would-refuse", out
    code, _, err = invoke(cfg, "reverse", "--batch", str(rev), "--yes")
    assert code == ExitCode.DECLINED, err
    assert "line 2: DP-2: refused: " in err


def test_dry_run_table(tmp_path: Path, cfg: Path) -> None:
    src = csv_file(tmp_path / "in.csv", [("DT-1", "2.50")])
    result = CliRunner().invoke(app, ["--config", str(cfg), "-o", "table", "capture",
                                      "--batch", str(src), "--dry-run", "--offline"])
    assert result.exit_code == 0, result.stderr
    assert "nothing sent" in result.stdout
    assert "would send 1 row(s) (2.50 EUR)" in result.stdout


def test_refund_needs_yes_without_a_terminal(tmp_path: Path, cfg: Path, sandbox_url: str) -> None:
    refs = ["RN-1", "RN-2"]
    seed_preauths(sandbox_url, refs)
    cap = csv_file(tmp_path / "cap.csv", [(r, "10.00") for r in refs])
    assert invoke(cfg, "capture", "--batch", str(cap))[0] == ExitCode.OK
    src = csv_file(tmp_path / "refund.csv", [(r, "4.00") for r in refs])
    code, _, err = invoke(cfg, "refund", "--batch", str(src))
    assert code == ExitCode.USAGE
    assert "2 row(s) (8.00 EUR) needs confirmation" in err
    assert "--yes" in err
    assert [r["kind"] for r in follow_ups(sandbox_url, refs)].count("refund") == 0
    code, _out, err = invoke(cfg, "refund", "--batch", str(src), "--yes")
    assert code == ExitCode.OK, err
    assert [r["kind"] for r in follow_ups(sandbox_url, refs)].count("refund") == 2


def test_stdin_jsonl(tmp_path: Path, cfg: Path, sandbox_url: str, monkeypatch: pytest.MonkeyPatch
                     ) -> None:
    seed_preauths(sandbox_url, ["SI-1"])
    monkeypatch.chdir(tmp_path)
    data = '{"ref": "SI-1", "amount": "7.00"}\n'
    code, out, err = invoke(cfg, "capture", "--batch", "-", stdin=data)
    assert code == ExitCode.OK, err
    assert list(tmp_path.glob("walletctl-capture-*.journal"))
    code, out, err = invoke(cfg, "capture", "--batch", "-", stdin=data)
    assert code == ExitCode.OK, err
    assert json.loads(out)["earlier_run"] == 1
    assert [Decimal(str(r["amount"])) for r in follow_ups(sandbox_url, ["SI-1"])] == \
        [Decimal("7.00")]


def test_bad_options_are_usage_errors(tmp_path: Path, cfg: Path) -> None:
    src = csv_file(tmp_path / "in.csv", [("X-1", "1.00")])
    for args, text in [
        (["--concurrency", "0"], "--concurrency"),
        (["--rate", "0"], "--rate"),
        (["--max-failures", "0"], "--max-failures"),
        (["--batch-id", "a b"], "--batch-id"),
        (["--resume", "--journal", str(tmp_path / "none.journal")], "no journal"),
    ]:
        code, _, err = invoke(cfg, "capture", "--batch", str(src), *args)
        assert code == ExitCode.USAGE, (args, err)
        assert text in err
    code, _, err = invoke(cfg, "capture", "--batch", str(tmp_path / "missing.csv"))
    assert code == ExitCode.USAGE
    assert "no such file" in err
    code, _, err = invoke(cfg, "capture", "--batch", str(tmp_path))
    assert code == ExitCode.USAGE
    assert "a directory, not a file" in err
    code, _, err = invoke(cfg, "capture", "--batch", "/dev/null")  # a device, not rows
    assert code == ExitCode.USAGE
    assert "a character device, not a file" in err
    assert "no such file" not in err


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, ExitCode.OK),
        ({"counts": {"confirmed": 3, "refused": 1, "unknown": 0, "pending": 0}},
         ExitCode.DECLINED),
        ({"counts": {"confirmed": 3, "refused": 1, "unknown": 1, "pending": 0}},
         ExitCode.UNKNOWN_OUTCOME),
        ({"breaker_open": True, "counts": {"confirmed": 1, "refused": 0, "unknown": 1,
                                           "pending": 5}}, ExitCode.GATEWAY),
        ({"interrupted": True, "breaker_open": True}, ExitCode.INTERRUPTED),
        ({"fatal": "401", "fatal_code": 9}, ExitCode.AUTH),
        ({"counts": {"confirmed": 0, "refused": 0, "unknown": 0, "pending": 2}},
         ExitCode.GATEWAY),
    ],
)
def test_exit_codes(changes: dict[str, object], expected: ExitCode) -> None:
    report = RunReport()
    for key, value in changes.items():
        setattr(report, key, value)
    assert _exit_code(report) == expected


def test_progress_bar_counts_rows_on_a_terminal() -> None:
    import io

    from rich.console import Console

    from walletctl.ops.batch.journal import Plan
    from walletctl.ops.batch.runner import RowResult
    from walletctl.render.batch import progress_bar

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160)
    original = progress_bar

    progress, update = original(Plan(rows=3), True, console)
    with progress:
        for status in ("confirmed", "refused", "unknown"):
            update(RowResult(2, "R", "N", "capture", Decimal(1), "EUR", status))
    task = progress.tasks[0]
    assert (task.completed, task.total) == (3, 3)
    assert (task.fields["failed"], task.fields["unknown"]) == (1, 1)
    assert "refused 1 · unknown 1" in buffer.getvalue()
    progress_none, noop = original(Plan(rows=3), False)
    assert progress_none is None
    noop(RowResult(2, "R", "N", "capture", Decimal(1), "EUR", "confirmed"))


def test_profile_column(tmp_path: Path, cfg: Path, sandbox_url: str) -> None:
    seed_preauths(sandbox_url, ["PC-1", "PC-2"])
    with cfg.open("a") as fh:  # a second profile for the same merchant
        fh.write(cfg.read_text().split("[profiles.sb]")[1].join(["\n[profiles.other]", ""])
                 .replace("[profiles.sb.auth]", "[profiles.other.auth]"))
    src = tmp_path / "in.csv"
    src.write_text("ref,amount,currency,profile\nPC-1,1.00,EUR,other\nPC-2,1.00,EUR,nosuch\n")
    code, _, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.VALIDATION, err
    assert "line 3: profile:" in err
    assert "nosuch" in err
    src.write_text("ref,amount,currency,profile\nPC-1,1.00,EUR,other\nPC-2,1.00,EUR,\n")
    code, out, err = invoke(cfg, "capture", "--batch", str(src))
    assert code == ExitCode.OK, err
    assert json.loads(out)["confirmed"] == 2


def test_rate_and_concurrency_options_reach_the_runner(
    tmp_path: Path, cfg: Path, sandbox_url: str
) -> None:
    refs = [f"RT-{i}" for i in range(6)]
    seed_preauths(sandbox_url, refs)
    src = csv_file(tmp_path / "in.csv", [(r, "1.00") for r in refs])
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--rate", "500",
                            "--concurrency", "2", "--max-failures", "3",
                            "--batch-id", "rate-test-1")
    assert code == ExitCode.OK, err
    summary = json.loads(out)
    assert summary["batch_id"] == "rate-test-1"
    assert summary["requests"] == 6  # one round trip per row (each on its own original)
    assert summary["events"]["direct"] == 6
    assert all(str(r["reference"]).startswith("cap-rate-tes-")
               for r in follow_ups(sandbox_url, refs))


def test_unreachable_gateway_stops_the_batch_within_seconds(tmp_path: Path) -> None:
    import socket
    import time

    from batch_helpers import cli_env

    from cli_runner import run_walletctl

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = write_profile(tmp_path, f"http://127.0.0.1:{port}")
    src = csv_file(tmp_path / "in.csv", [(f"UR-{i}", "1.00") for i in range(200)])
    started = time.monotonic()
    proc = run_walletctl(["--config", str(cfg), "-o", "json", "capture", "--batch", str(src)],
                         env=cli_env(tmp_path))
    took = time.monotonic() - started
    assert proc.returncode == ExitCode.NETWORK, proc.stderr
    assert "walletctl: stopped: could not connect" in proc.stderr
    assert "hint: check the profile's base_url" in proc.stderr  # the single command's hint
    summary = json.loads(proc.stdout)
    assert summary["pending"] == 200
    assert summary["requests"] <= 8 * 3
    assert took < scaled(15)  # it takes ~1-2 s


def test_checked_dry_run_against_an_unreachable_gateway_says_so(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = write_profile(tmp_path, f"http://127.0.0.1:{port}")
    src = csv_file(tmp_path / "in.csv", [("UD-1", "1.00"), ("UD-2", "1.00")])
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--dry-run")
    assert code == ExitCode.NETWORK, err
    assert "pre-flight stopped: could not connect" in err
    assert {json.loads(x)["status"] for x in out.splitlines()} == {"unchecked"}
    reasons = {json.loads(x)["reason"] for x in out.splitlines()}
    assert len(reasons) == 1, reasons  # this run's reason, never None or an earlier run's
    assert reasons.pop().startswith("not checked: could not connect"), reasons
    assert "unchecked: None" not in err
    code, out, err = invoke(cfg, "capture", "--batch", str(src), "--dry-run", "--offline")
    assert code == ExitCode.OK, err
    assert {json.loads(x)["status"] for x in out.splitlines()} == {"would-send"}
