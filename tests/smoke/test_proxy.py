"""smoke brings its own transport, so it must resolve proxies itself (as httpx would)."""

from __future__ import annotations

import pytest

from walletctl.ops.smoke.target import environment_transport


def _proxy_of(transport: object) -> object:
    pool = getattr(transport, "_pool", None)
    return getattr(pool, "_proxy_url", None)


def test_https_proxy_is_used_for_a_remote_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    transport = environment_transport("https://gateway.example/api")
    assert _proxy_of(transport) is not None, "HTTPS_PROXY ignored"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765", "http://localhost:1"])
def test_loopback_is_never_proxied(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    assert _proxy_of(environment_transport(url)) is None


def test_no_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "gateway.example")
    assert _proxy_of(environment_transport("https://gateway.example")) is None
