"""A newcomer's CI run, as docs/ci.md prints it: a profile from the environment alone is shown
and checked like a file's, smoke says what it did not run (and why) instead of ending in a
misleading exit, hints name variables (there is no file to `profile set`), and the smaller
promises of the CI contract (report paths, --no-input, --log-format json) hold. In-process."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from sandbox_fixtures import make_checkout_body
from walletctl.cli.main import app
from walletctl.constants import ExitCode
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

API_KEY = "env-honest-key-Pw37Lk"
SERVICE_SECRET = "env-honest-service-Qa90Zt"
MERCHANT, STORE = "M-ENV", "S-ENV"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[str]:
    with EmbeddedSandbox(SandboxConfig(api_key=API_KEY, service_secret=SERVICE_SECRET,
                                       quiet=True)) as sb:
        yield sb.url


def env_only(tmp: Path, url: str, **extra: str | None) -> dict[str, str | None]:
    """docs/ci.md's YAML: four variables, no profiles file anywhere (HOME in tmp)."""
    return {"HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "cfg"),
            "XDG_DATA_HOME": str(tmp / "data"), "WALLETCTL_CONFIG": None,
            "WALLETCTL_PROFILE": None, "WALLETCTL_BASE_URL": url,
            "WALLETCTL_MERCHANT_ID": MERCHANT, "WALLETCTL_STORE_ID": STORE,
            "WALLETCTL_API_KEY": API_KEY, "WALLETCTL_SERVICE_SECRET": None,
            "WALLETCTL_SANDBOX_TOKEN": None, "WALLETCTL_CURRENCY": None,
            "WALLETCTL_NO_INPUT": None, "WALLETCTL_LOG_FORMAT": None, **extra}


def invoke(env: dict[str, str | None], *args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def no_secret_in(*texts: str) -> None:
    for text in texts:
        assert API_KEY not in text
        assert SERVICE_SECRET not in text


def test_smoke_without_the_service_secret_skips_browser_wallet_and_names_it(
        tmp_path: Path, sandbox: str) -> None:
    report = tmp_path / "r.json"
    env = env_only(tmp_path, sandbox)
    result = invoke(env, "smoke", "-s", "redirect-sale", "-s", "browser-wallet",
                    "--json-file", str(report))
    assert result.exit_code == ExitCode.OK, result.output
    doc = json.loads(report.read_text())
    wallet = next(s for s in doc["scenarios"] if s["name"] == "browser-wallet")
    assert wallet["status"] == "skipped"
    assert all(st["status"] == "skipped" and "WALLETCTL_SERVICE_SECRET" in st["message"]
               for st in wallet["steps"])
    assert wallet["steps"][0]["exchanges"] == []  # nothing was asked of the key service
    assert next(s for s in doc["scenarios"] if s["name"] == "redirect-sale")["status"] == \
        "passed"
    no_secret_in(result.stdout, result.stderr, report.read_text())
    # with it set, the scenario runs and passes
    result = invoke({**env, "WALLETCTL_SERVICE_SECRET": SERVICE_SECRET}, "smoke",
                    "-s", "browser-wallet")
    assert result.exit_code == ExitCode.OK, result.output
    no_secret_in(result.stdout, result.stderr)


def test_a_refused_service_secret_names_the_variable_not_profile_set(
        tmp_path: Path, sandbox: str) -> None:
    env = env_only(tmp_path, sandbox, WALLETCTL_SERVICE_SECRET="not-the-secret-1234")
    result = invoke(env, "smoke", "-s", "browser-wallet")
    assert result.exit_code == ExitCode.AUTH, result.output
    assert "WALLETCTL_SERVICE_SECRET" in result.stderr
    assert "profile set" not in result.stderr
    assert "not-the-secret-1234" not in result.output


def test_checkout_without_redirects_names_the_variables(tmp_path: Path, sandbox: str) -> None:
    result = invoke(env_only(tmp_path, sandbox), "checkout", "--amount", "1.00",
                    "--ref", "ENV-NO-REDIRECTS")
    assert result.exit_code != 0, result.output
    assert "WALLETCTL_SUCCESS_URL" in result.stderr, result.stderr
    assert "WALLETCTL_CURRENCY=EUR" in result.stderr, result.stderr
    assert "[profiles.env]" not in result.stderr
    assert "profile set" not in result.stderr


def test_profile_show_and_check_show_the_environment_profile(tmp_path: Path,
                                                             sandbox: str) -> None:
    env = env_only(tmp_path, sandbox)
    for args in (["profile", "show"], ["profile", "show", "env"]):
        result = invoke(env, "-o", "json", *args)
        assert result.exit_code == 0, (args, result.output)
        shown = json.loads(result.stdout)
        assert shown["name"] == "env"
        assert shown["base_url"] == sandbox
        assert shown["merchant_id"] == MERCHANT
        assert shown["auth"]["secret"] == "env WALLETCTL_API_KEY (set)"
        no_secret_in(result.stdout, result.stderr)
    named = invoke(env, "-p", "env", "-o", "json", "profile", "show")  # -p env: the same
    assert json.loads(named.stdout)["base_url"] == sandbox, named.output
    table = invoke(env, "-o", "table", "profile", "show")
    assert "env WALLETCTL_API_KEY (set)" in table.stdout
    result = invoke(env, "-o", "json", "profile", "check")
    assert result.exit_code == 0, result.output
    checks = json.loads(result.stdout)
    assert {c["profile"] for c in checks} >= {"env"}
    hints = " ".join(c.get("hint") or "" for c in checks)
    assert "profile set" not in hints
    assert "WALLETCTL_SUCCESS_URL" in hints
    assert "WALLETCTL_SERVICE_SECRET" in hints
    no_secret_in(result.stdout, result.stderr)
    # a profiles file in the usual place does not change which profile commands use
    cfg = tmp_path / "cfg" / "walletctl"
    cfg.mkdir(parents=True)
    (cfg / "profiles.toml").write_text(
        'default_profile = "other"\n[profiles.other]\nbase_url = "http://127.0.0.1:9"\n'
        'merchant_id = "M"\nstore_id = "S"\nuser_id = "u"\n[profiles.other.auth]\n'
        'scheme = "none"\n')
    (cfg / "profiles.toml").chmod(0o600)
    assert json.loads(invoke(env, "-o", "json", "profile", "show").stdout)["name"] == "env"
    assert json.loads(invoke(env, "-o", "json", "profile", "show", "other").stdout)[
        "name"] == "other"
    # a bad environment: one line naming the variable, exit 3
    result = invoke({**env, "WALLETCTL_STORE_ID": None}, "profile", "check")
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "WALLETCTL_STORE_ID" in result.output


def test_smoke_against_a_stopped_gateway_lists_no_references(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = tmp_path / "r.json"
    result = invoke(env_only(tmp_path, f"http://127.0.0.1:{port}"), "smoke",
                    "--json-file", str(report))
    assert result.exit_code == ExitCode.NETWORK, result.output
    assert "references" not in result.stdout, result.stdout
    assert "lookup REF" not in result.stdout
    assert json.loads(report.read_text())["references"] == []


def test_smoke_report_path_that_is_a_directory_exits_4(tmp_path: Path, sandbox: str) -> None:
    for flag in ("--junit", "--json-file"):
        result = invoke(env_only(tmp_path, sandbox), "smoke", "-s", "redirect-sale",
                        flag, str(tmp_path))
        assert result.exit_code == ExitCode.VALIDATION, result.output
        assert flag in result.stderr
        assert "directory" in result.stderr


def _approved(url: str, ref: str, amount: str = "1000") -> None:
    body = make_checkout_body(ref, amount, merchantId=MERCHANT, storeId=STORE)
    r = httpx.post(url + "/api/v5/checkout", json=body,
                   headers={"Authorization": f"PublicApiKey {API_KEY}"})
    assert r.status_code == 200, r.text
    assert httpx.post(f"{url}/_sandbox/checkouts/{ref}/approve").status_code == 200


def test_batch_refusals_name_no_input_and_log_as_warnings(tmp_path: Path,
                                                          sandbox: str) -> None:
    _approved(sandbox, "ENV-BATCH-1")
    rows = tmp_path / "refs.csv"
    rows.write_text("ref,amount\nENV-BATCH-1,1.00\nENV-BATCH-1,5000.00\n")
    env = env_only(tmp_path, sandbox, WALLETCTL_CURRENCY="EUR")
    result = invoke(env, "--no-input", "refund", "--batch", str(rows))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--no-input" in result.stderr
    result = invoke(env, "--log-format", "json", "refund", "--batch", str(rows), "--yes")
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    named = [x for x in lines if "ENV-BATCH-1" in x.get("message", "")]
    assert named, lines
    assert all(x["level"] in ("warning", "error") for x in named), named
