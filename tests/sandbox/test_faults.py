"""Fault injection: each mode, on a real loopback port (httpx), plus the grammar and bounds."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS, client_class, make_checkout_body
from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import FaultConfig, SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

from .helpers import CHECKOUT


def _post(sb: EmbeddedSandbox, ref: str, fault: str | None) -> httpx.Response:
    headers = dict(AUTH_HEADERS)
    if fault is not None:
        headers["X-Sandbox-Fault"] = fault
    return httpx.post(sb.url + CHECKOUT, json=make_checkout_body(ref), headers=headers,
                      timeout=10)


def _count(sb: EmbeddedSandbox) -> int:
    n: int = httpx.get(sb.url + "/_sandbox/ledger").json()["count"]
    return n


# -- grammar and bounds ------------------------------------------------------------------------


def test_header_grammar() -> None:
    f = FaultConfig.parse_header("latency=50; jitter=10;error-rate=0.2;status=502;"
                                 "throttle-rate=0.1;retry-after=3;drop-rate=0.05;seed=7")
    assert (f.latency_ms, f.jitter_ms, f.error_rate, f.error_status) == (50, 10, 0.2, 502)
    assert (f.throttle_rate, f.retry_after, f.drop_rate, f.seed) == (0.1, 3, 0.05, 7)
    assert f.active
    assert not FaultConfig.parse_header("seed=3").active


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("latency=20000", "^latency: must be between"),  # the names as written
        ("error-rate=1.5", "^error-rate: must be a rate"),
        ("status=404", "^status: must be a 5xx"),
        ("retry-after=3600", "^retry-after: must be between"),
        ("bogus=1", "bogus"),
        ("latency", "expected name=value"),
        ("latency=fast", "^latency: must be a number"),
        ("latency=1.5", "whole number"),
    ],
)
def test_bad_fault_settings_are_refused(text: str, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        FaultConfig.parse_header(text)


def test_faults_are_refused_on_a_non_loopback_host() -> None:
    with pytest.raises(ValueError, match="loopback"):
        SandboxConfig(host="0.0.0.0", faults=FaultConfig(error_rate=0.5))
    cfg = SandboxConfig(host="0.0.0.0")
    with client_class()(create_app(cfg), headers=AUTH_HEADERS) as client:
        assert client.post("/_sandbox/faults", json={"error_rate": 1}).status_code == 403
        # the per-request header is ignored off loopback
        resp = client.post(CHECKOUT, json=make_checkout_body("NL-1"),
                           headers={"X-Sandbox-Fault": "error-rate=1"})
        assert resp.status_code == 200


def test_bad_fault_header_is_a_400(sandbox_client: Any) -> None:
    resp = sandbox_client.post(CHECKOUT, json=make_checkout_body("H-1"),
                               headers={"X-Sandbox-Fault": "error-rate=7"})
    assert resp.status_code == 400
    assert "X-Sandbox-Fault" in resp.json()["details"]["message"]


# -- each mode ------------------------------------------------------------------------------------


def test_latency_is_added_and_reported(live_sandbox: EmbeddedSandbox) -> None:
    start = time.monotonic()
    resp = _post(live_sandbox, "LAT-1", "latency=150;jitter=0")
    assert resp.status_code == 200
    assert resp.headers["X-Sandbox-Fault-Applied"] == "latency=150ms"
    assert time.monotonic() - start >= 0.15  # a lower bound only: never flaky


def test_jitter_stays_within_bounds(sandbox_client: Any) -> None:
    seen = set()
    for n in range(8):
        resp = sandbox_client.post(CHECKOUT, json=make_checkout_body(f"JIT-{n}"),
                                   headers={"X-Sandbox-Fault": "latency=20;jitter=10;seed=1"})
        ms = int(resp.headers["X-Sandbox-Fault-Applied"].removeprefix("latency=").rstrip("ms"))
        assert 10 <= ms <= 30
        seen.add(ms)
    assert len(seen) > 1


def test_error_before_commit_stores_nothing(live_sandbox: EmbeddedSandbox) -> None:
    resp = _post(live_sandbox, "ERR-1", "error-rate=1;status=502")
    assert resp.status_code == 502
    assert set(resp.json()) == {"code", "description", "details"}
    assert _count(live_sandbox) == 0
    assert _post(live_sandbox, "ERR-1", None).status_code == 200  # the retry is clean


def test_throttle_answers_429_with_retry_after(live_sandbox: EmbeddedSandbox) -> None:
    resp = _post(live_sandbox, "THR-1", "throttle-rate=1;retry-after=2")
    assert resp.status_code == 429
    assert resp.headers["Retry-After"] == "2"
    assert resp.json()["description"] == "TooManyRequests"
    assert _count(live_sandbox) == 0


def test_commit_then_drop(live_sandbox: EmbeddedSandbox) -> None:
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        _post(live_sandbox, "DROP-1", "drop-rate=1")
    assert _count(live_sandbox) == 1  # it WAS stored
    again = _post(live_sandbox, "DROP-1", None)
    # the identical checkout retried gets the stored answer, not a second transaction
    assert again.status_code == 200, again.text
    assert again.headers.get("x-sandbox-replayed") == "true"
    assert _count(live_sandbox) == 1
    # the server is still healthy after the drop
    assert httpx.get(live_sandbox.url + "/_sandbox/health").status_code == 200


def test_error_after_commit(live_sandbox: EmbeddedSandbox) -> None:
    resp = _post(live_sandbox, "AFT-1", "error-after-rate=1;status=500")
    assert resp.status_code == 500
    assert _count(live_sandbox) == 1


def test_seeded_faults_are_reproducible() -> None:
    def run() -> list[int]:
        app = create_app(SandboxConfig(faults=FaultConfig(error_rate=0.5, seed=42)))
        with client_class()(app, headers=AUTH_HEADERS) as client:
            return [client.post(CHECKOUT, json=make_checkout_body(f"S-{n}")).status_code
                    for n in range(20)]

    first, second = run(), run()
    assert first == second
    assert {200, 503} == set(first)


def test_server_faults_via_control_route(sandbox_client: Any) -> None:
    assert sandbox_client.get("/_sandbox/faults").json()["error_rate"] == 0.0
    set_resp = sandbox_client.post("/_sandbox/faults",
                                   json={"error-rate": 1, "status": 504})
    assert set_resp.status_code == 200, set_resp.text
    assert sandbox_client.get("/_sandbox/faults").json()["error_status"] == 504
    assert sandbox_client.post(CHECKOUT, json=make_checkout_body("F-1")).status_code == 504
    # never applied to /_sandbox routes
    assert sandbox_client.get("/_sandbox/ledger").status_code == 200
    # a request header replaces the server faults for that request
    ok = sandbox_client.post(CHECKOUT, json=make_checkout_body("F-2"),
                             headers={"X-Sandbox-Fault": "seed=1"})
    assert ok.status_code == 200
    assert sandbox_client.post("/_sandbox/faults", json={}).status_code == 200
    assert sandbox_client.post(CHECKOUT, json=make_checkout_body("F-3")).status_code == 200
    bad = sandbox_client.post("/_sandbox/faults", json={"latency": 99999})
    assert bad.status_code == 400
