"""``sandbox proxy`` / ``sandbox drift`` / ``serve --replay`` from the outside.

A second sandbox process, started with other settings (decimal amounts, added latency, its
own API key and service secret), plays the real gateway; ``walletctl sandbox proxy`` runs
in front of it as a process of its own and records. walletctl's commands (in process) go
through the proxy; raw requests break each rule class; the recording is searched for every
8-character piece of every key; drift replays it against fresh sandboxes; ``serve --replay``
answers it back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from walletctl.cli.main import app

API_KEY = "fidelity-gw-key-Zq81Lm"
SERVICE_SECRET = "fidelity-gw-secret-Pw47Kd"
KEY_ENV = "WALLETCTL_FIDELITY_KEY"
SECRET_ENV = "WALLETCTL_FIDELITY_SECRET"
LATENCY_MS = 80
M, S = "M-FID", "S-01"
AUTH = {"Authorization": f"PublicApiKey {API_KEY}"}


class Process:
    """``walletctl ARGS --ready-file F`` as a process; its URL from the ready file."""

    def __init__(self, workdir: Path, name: str, *args: str) -> None:
        self.ready = workdir / f"{name}.url"
        self.err_path = workdir / f"{name}.err"
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        self.out_path = workdir / f"{name}.out"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "walletctl", *args, "--port", "0",
             "--ready-file", str(self.ready)],
            stdout=self.out_path.open("w"), stderr=self.err_path.open("w"), env=env)
        deadline = time.monotonic() + 60
        while not (self.ready.exists() and self.ready.read_text().endswith("\n")):
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, f"{name} not ready: {self.stderr()}"
            time.sleep(0.05)
        self.url = self.ready.read_text().strip()

    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def violations(proc: Process) -> list[str]:
    return [line for line in proc.stderr().splitlines() if line.startswith("violation ")]


def wait_for(proc: Process, text: str, timeout: float = 10.0) -> list[str]:
    """The violation lines once one holds ``text`` (reported after the answer is sent)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [v for v in violations(proc) if text in v]
        if lines:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"no violation with {text!r}: {proc.stderr()[-3000:]}")


def profile(path: Path, base_url: str) -> Path:
    path.write_text(f"""default_profile = "gw"

[profiles.gw]
base_url = "{base_url}"
merchant_id = "{M}"
store_id = "{S}"
user_id = "fid-bot"
amount_format = "decimal"
currency = "EUR"
timeout = 15

[profiles.gw.auth]
scheme = "PublicApiKey"
key_env = "{KEY_ENV}"
service_secret_env = "{SECRET_ENV}"

[profiles.gw.redirects]
return_url = "https://shop.example/return"
success_url = "https://shop.example/ok"
pending_url = "https://shop.example/pending"
error_url = "https://shop.example/error"
cancel_url = "https://shop.example/cancel"
refused_url = "https://shop.example/refused"
""", encoding="utf-8")
    path.chmod(0o600)
    return path


def checkout(ref: str, amount: str = "30.00", kind: str = "ecom.preauthorization",
             **over: Any) -> dict[str, Any]:
    body = {"merchantId": M, "storeId": S, "userId": "u", "type": kind, "amount": amount,
            "currencyCode": "EUR", "clientSystemTransactionId": ref,
            "checkoutDetails": {"paymentMethod": "WalletV2"},
            "redirectDetails": {k: f"https://shop.example/{k}" for k in (
                "returnUrl", "successUrl", "pendingUrl", "errorUrl", "cancelUrl",
                "refusedUrl")}}
    body.update(over)
    return body


def followup(ref: str, invoice: str, kind: str, amount: str) -> dict[str, Any]:
    return {"merchantId": M, "storeId": S, "userId": "u", "type": kind, "amount": amount,
            "currencyCode": "EUR", "clientSystemTransactionId": ref,
            "clientSystemInvoiceId": invoice, "apmDetails": {"apmProvider": "WalletV2"}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The gateway, the recording proxy, and everything sent through it (then stopped)."""
    work = tmp_path_factory.mktemp("fidelity")
    gateway = Process(work, "gateway", "sandbox", "serve", "-q", "--amount-format", "decimal",
                      "--latency", str(LATENCY_MS), "--api-key", API_KEY,
                      "--service-secret", SERVICE_SECRET)
    record = work / "recording"
    proxy = Process(work, "proxy", "sandbox", "proxy", "--upstream", gateway.url,
                    "--record", str(record), "--amount-format", "decimal")
    out: dict[str, Any] = {"gateway": gateway, "proxy": proxy, "record": record,
                           "work": work, "results": {}, "keys": []}
    # module-scoped: the per-test isolation (tests/conftest.py) is not in force yet, so the
    # history and the state directory are the module's own, never the user's
    own = {KEY_ENV: API_KEY, SECRET_ENV: SERVICE_SECRET,
           "WALLETCTL_AUDIT_LOG": str(work / "history.sqlite3"),
           "XDG_STATE_HOME": str(work / "state")}
    old = {k: os.environ.get(k) for k in own}
    os.environ.update(own)
    try:
        _traffic(out)
        assert proxy.stop() == 0
        yield out
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        proxy.stop()
        gateway.stop()


def _cli(config: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--config", str(config), *args])


def _traffic(out: dict[str, Any]) -> None:
    proxy, work, results = out["proxy"], out["work"], out["results"]
    config = profile(work / "profiles.toml", proxy.url)
    # 1. walletctl's own commands through the proxy
    results["smoke"] = _cli(config, "smoke")
    steps = [
        ("checkout", ["checkout", "--amount", "40.00", "--ref", "CLI-1", "--type", "preauth"]),
        ("approve", ["sandbox", "approve", "CLI-1"]),
        ("capture", ["capture", "CLI-1", "--amount", "15.00", "-y"]),
        ("refund", ["refund", "CLI-1", "--amount", "5.00", "-y"]),
        ("lookup", ["-o", "json", "lookup", "CLI-1"]),
        ("checkout2", ["checkout", "--amount", "12.50", "--ref", "CLI-2", "--type",
                       "preauth"]),
        ("approve2", ["sandbox", "approve", "CLI-2"]),
        ("reverse", ["reverse", "CLI-2", "-y"]),
        ("keys", ["-o", "json", "keys", "--refresh", "--show-secret"]),
    ]
    for name, args in steps:
        results[name] = _cli(config, *args)
    # the browser wallet: a token account made as the client script would, then authorize
    event = _wallet_event(proxy.url, json.loads(results["keys"].stdout)["apiKey"], work, out)
    results["account"] = _cli(config, "account", "--event", str(event))
    results["authorize"] = _cli(config, "authorize", "--event", str(event), "--amount", "3.00",
                                "--currency", "EUR", "--ref", "CLI-WP", "--type", "sale", "-y")
    # 2. raw requests breaking each rule class (each must still reach the gateway)
    raw: dict[str, httpx.Response] = {}
    with httpx.Client(base_url=proxy.url, headers=AUTH, timeout=30) as client:
        post = client.post
        raw["format"] = post("/api/v5/checkout", json=checkout("RAW-F", currencyCode="EURO"))
        raw["length"] = post("/api/v5/checkout", json=checkout("R" * 80))
        body = checkout("RAW-R")
        del body["redirectDetails"]["successUrl"]
        raw["required"] = post("/api/v5/checkout", json=body)
        raw["decimals"] = post("/api/v5/checkout", json=checkout("RAW-D", amount="12.345"))
        raw["reference"] = post("/api/v5/checkout", json=checkout("RAW\tTAB"))
        assert post("/api/v5/checkout", json=checkout("RAW-S", "20.00")).status_code == 200
        assert post(f"/_sandbox/checkouts/RAW-S/approve?merchantId={M}&storeId={S}"
                    ).status_code == 200
        assert client.get("/api/v5/apmTransactions", params={
            "merchantId": M, "storeId": S, "clientSystemTransactionId": "RAW-S"}
        ).status_code == 200
        raw["over-capture"] = post("/api/v5/apmTransactions", json=followup(
            "RAW-S-c1", "RAW-S", "ecom.capture", "25.00"))
        assert post("/api/v5/apmTransactions", json=followup(
            "RAW-S-c2", "RAW-S", "ecom.capture", "8.00")).status_code == 200
        raw["over-refund"] = post("/api/v5/apmTransactions", json=followup(
            "RAW-S-r1", "RAW-S", "ecom.refund", "9.00"))
        raw["reverse-captured"] = post("/api/v5/apmTransactions", json=followup(
            "RAW-S-v1", "RAW-S", "ecom.reversalPreauthorization", "20.00"))
        keys = httpx.post(f"{proxy.url}/api/v5/publicKeys", json={"merchantId": M,
                          "storeId": S}, auth=("fid", SERVICE_SECRET), timeout=30)
        out["keys"] = [keys.json()["apiKey"], keys.json()["encryptionKey"]]
        # 3. a 1 MB body and a slow upstream answer do not hold another client
        out["concurrency"] = _concurrency(proxy.url)
    out["raw"] = raw


def _wallet_event(url: str, api_key: str, work: Path, out: dict[str, Any]) -> Path:
    """An ``event.detail`` file for a Token payment account created through the proxy."""
    cards = httpx.get(url + "/_sandbox/wallet/cards", timeout=10).json()
    cards = cards.get("cards", cards) if isinstance(cards, dict) else cards
    card_id = next(c for c in cards if "token" in json.dumps(c).lower())["id"]
    token = httpx.post(url + "/_sandbox/wallet/token", timeout=10, json={
        "cardId": card_id, "gatewayMerchantId": M, "publicKeyApi": api_key}).json()
    created = httpx.post(url + "/api/v5/paymentAccounts", timeout=30,
                         headers={"Authorization": f"PublicApiKey {api_key}"},
                         json={"merchantId": M, "storeId": S,
                               "clientSystemTransactionId": "CLI-WP", "paymentData": token})
    assert created.status_code == 200, created.text
    account = created.json()
    out["cryptogram"] = account["cryptogram"]
    event = work / "event.json"
    event.write_text(json.dumps({
        "clientSystemTransactionId": "CLI-WP",
        "transactionAccountId": account["transactionAccountId"],
        "transactionMethod": "WalletPay", "cryptogram": account["cryptogram"],
        "eciIndicator": account.get("eciIndicator")}))
    return event


def _concurrency(url: str) -> dict[str, float]:
    timings: dict[str, float] = {}

    def slow() -> None:
        started = time.perf_counter()
        with httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
            client.get("/api/v5/apmTransactions", headers={"X-Sandbox-Fault": "latency=3000"},
                       params={"merchantId": M, "storeId": S,
                               "clientSystemTransactionId": "RAW-S"})
        timings["slow"] = time.perf_counter() - started

    def big() -> None:
        with httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
            # 60,000 objects: costly to read and validate (the checks run off the event loop)
            body = json.dumps(checkout("RAW-BIG", items=[{"n": i} for i in range(60_000)])
                              ).encode()
            assert 800_000 < len(body) < 1_000_000
            timings["big_status"] = client.post(
                "/api/v5/checkout", content=body,
                headers={"content-type": "application/json"}).status_code

    threads = [threading.Thread(target=slow), threading.Thread(target=big)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # both are in the proxy now
    with httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
        started = time.perf_counter()
        quick = client.get("/api/v5/apmTransactions", params={
            "merchantId": M, "storeId": S, "clientSystemTransactionId": "RAW-S"})
        timings["quick"] = time.perf_counter() - started
        timings["quick_status"] = quick.status_code
    for thread in threads:
        thread.join(timeout=30)
    return timings


# -- the commands work through the proxy ------------------------------------------------------


@pytest.mark.slow
def test_walletctl_commands_and_smoke_work_through_the_proxy(world: dict[str, Any]) -> None:
    results = world["results"]
    smoke = results.pop("smoke")
    assert smoke.exit_code == 0, smoke.output
    for name, result in results.items():
        assert result.exit_code == 0, f"{name}: {result.output}"
    records = json.loads(results["lookup"].stdout)
    assert {r["state"] for r in records} == {"Approved"}
    # the conformant gateway's answers raise no violation, and walletctl's own valid
    # requests none but the smoke run's deliberate refusals (over-capture, ...)
    lines = violations(world["proxy"])
    assert not [line for line in lines if line.startswith("violation answer")], lines
    deliberate = [line for line in lines if "smoke-" in line]
    assert len(deliberate) == 3, lines


# -- every rule class is reported with its field, and forwarded ---------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("case", "field"), [
    ("format", "currencyCode"),
    ("length", "clientSystemTransactionId"),
    ("required", "redirectDetails.successUrl"),
    ("decimals", "amount"),
    ("reference", "clientSystemTransactionId"),
    ("over-capture", "amount"),
    ("over-refund", "amount"),
    ("reverse-captured", "type"),
])
def test_each_rule_class_is_reported_and_still_forwarded(world: dict[str, Any], case: str,
                                                         field: str) -> None:
    answer = world["raw"][case]
    # the gateway's own answer (its latency fault header proves the request reached it)
    assert answer.headers.get("x-sandbox-fault-applied", "").startswith("latency=")
    assert answer.status_code in (400, 422)
    route = ("POST /api/v5/apmTransactions" if case.startswith(("over", "reverse"))
             else "POST /api/v5/checkout")
    lines = [line for line in violations(world["proxy"])
             if line.startswith(f"violation request {route}: {field}: ")]
    assert lines, violations(world["proxy"])


def test_a_big_body_or_a_slow_upstream_holds_no_other_client(world: dict[str, Any]) -> None:
    timings = world["concurrency"]
    assert timings["quick_status"] == 200
    assert timings["big_status"] == 400  # forwarded whole; the gateway refused the field
    assert timings["slow"] >= 3.0
    assert timings["quick"] < 2.0  # while the 3-second answer was pending


def test_the_recording_holds_no_secret(world: dict[str, Any]) -> None:
    files = sorted(world["record"].glob("*.exchange.json"))
    assert len(files) > 60
    text = "\n".join(path.read_text(encoding="utf-8") for path in files)
    issued = world["keys"] + [v for k, v in json.loads(world["results"]["keys"].stdout).items()
                              if k in ("apiKey", "encryptionKey")]
    assert len(issued) == 4
    for secret in [API_KEY, SERVICE_SECRET, *issued, world["cryptogram"]]:
        for i in range(len(secret) - 7):
            assert secret[i:i + 8] not in text, f"a piece of a secret: {secret[i:i + 8]!r}"
    first = json.loads(files[0].read_text())
    assert set(first) >= {"request", "answer", "timings", "violations"}


# -- drift ------------------------------------------------------------------------------------


def test_drift_names_each_differing_setting(world: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["-o", "json", "sandbox", "drift", str(world["record"])])
    assert result.exit_code == 13, result.output
    report = json.loads(result.stdout)
    assert report["settings"][0] == "--amount-format decimal"
    assert any(s.startswith("--latency ") for s in report["settings"]), report["settings"]
    table = CliRunner().invoke(app, ["-o", "table", "sandbox", "drift", str(world["record"])])
    assert "align with --amount-format decimal" in table.stdout


def test_drift_is_silent_against_an_identical_sandbox(world: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, [
        "-o", "json", "sandbox", "drift", str(world["record"]), "--amount-format", "decimal",
        "--latency", str(LATENCY_MS)])
    report = json.loads(result.stdout)
    assert result.exit_code == 0, report["differences"]
    assert report["agree"]
    assert report["replayed"] > 40


def test_drift_refuses_a_directory_without_a_recording(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["sandbox", "drift", str(tmp_path)])
    assert result.exit_code == 2
    assert "holds no recorded exchange" in result.stderr


# -- serve --replay -----------------------------------------------------------------------------


def test_serve_replay_answers_the_recorded_run_identically(world: dict[str, Any],
                                                           tmp_path: Path) -> None:
    replay = Process(tmp_path, "replay", "sandbox", "serve", "--replay", str(world["record"]),
                     "--print-profile")
    try:
        assert f'base_url = "{replay.url}"' in replay.out_path.read_text()
        files = sorted(world["record"].glob("*.exchange.json"))
        with httpx.Client(base_url=replay.url, timeout=30) as client:
            for path in files:
                doc = json.loads(path.read_text())
                req = doc["request"]
                headers = {k: v for k, v in req["headers"].items()
                           if k.lower() == "content-type"}
                answer = client.request(req["method"], req["path"] + (
                    f"?{req['query']}" if req["query"] else ""), headers=headers,
                    content=req["body"].encode() or None)
                assert answer.status_code == doc["answer"]["status"], path.name
                assert answer.text == doc["answer"]["body"], path.name
            unmatched = client.post("/api/v5/checkout", json=checkout("NEVER-SENT"))
        assert unmatched.status_code == 501
        message = unmatched.json()["details"]["message"]
        assert "closest recorded request is #" in message
        assert "POST /api/v5/checkout (differs at clientSystemTransactionId)" in message
    finally:
        assert replay.stop() == 0
