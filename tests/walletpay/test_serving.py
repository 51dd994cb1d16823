"""``/walletpay.js`` over raw HTTP on a real port: HEAD, gzip, ETag / 304, versioned caching."""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox
from walletctl.sandbox.walletpay import client_script_source


@pytest.fixture(scope="module")
def sb() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as s:
        yield s


class Raw:
    def __init__(self, resp: httpx.Response, content: bytes) -> None:
        self.status_code = resp.status_code
        self.headers = resp.headers
        self.content = content  # the bytes on the wire (not decompressed)


def _get(sb: EmbeddedSandbox, method: str = "GET", path: str = "/walletpay.js",
         **headers: str) -> Raw:
    with httpx.Client(headers={"Accept-Encoding": "identity"}) as c, \
            c.stream(method, sb.url + path, headers=headers) as resp:
        return Raw(resp, b"".join(resp.iter_raw()))


def test_gzip_when_accepted_identity_otherwise(sb: EmbeddedSandbox) -> None:
    source = client_script_source()
    plain = _get(sb)
    assert plain.status_code == 200
    assert plain.content == source
    assert "content-encoding" not in plain.headers
    assert plain.headers["content-type"].startswith("application/javascript")
    zipped = _get(sb, **{"Accept-Encoding": "gzip, deflate, br"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert gzip.decompress(zipped.content) == source
    assert len(zipped.content) < len(source) / 2
    assert "Accept-Encoding" in zipped.headers["vary"]
    refused = _get(sb, **{"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers


def test_head_matches_get_without_a_body(sb: EmbeddedSandbox) -> None:
    for enc in ("identity", "gzip"):
        get = _get(sb, **{"Accept-Encoding": enc})
        head = _get(sb, "HEAD", **{"Accept-Encoding": enc})
        assert head.status_code == 200
        assert head.content == b""
        for name in ("content-length", "content-type", "etag", "cache-control"):
            assert head.headers.get(name) == get.headers.get(name), name


def test_etag_revalidation_and_versioned_url(sb: EmbeddedSandbox) -> None:
    first = _get(sb)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, max-age=300"
    again = _get(sb, **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert _get(sb, **{"If-None-Match": '"other"'}).status_code == 200
    version = etag.strip('"')
    pinned = _get(sb, path=f"/walletpay.js?v={version}")
    assert "immutable" in pinned.headers["cache-control"]
    assert "max-age=31536000" in pinned.headers["cache-control"]
    stale = _get(sb, path="/walletpay.js?v=0000")
    assert stale.headers["cache-control"] == "public, max-age=300"


@pytest.mark.parametrize("path", ["/demo/merchant", "/demo/merchant.js"])
def test_demo_files_take_head_and_etag(sb: EmbeddedSandbox, path: str) -> None:
    head = _get(sb, "HEAD", path)
    assert head.status_code == 200
    assert _get(sb, path=path, **{"If-None-Match": head.headers["etag"]}).status_code == 304


def test_serve_allow_origin_flag_is_validated() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--allow-origin",
         "https://shop.example/checkout"], capture_output=True, text=True, timeout=60,
        check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "--allow-origin 'https://shop.example/checkout': must be an origin" in proc.stderr


@pytest.mark.parametrize(("values", "expected"), [
    ([], None), (["*"], None),
    (["HTTPS://Shop.Example", "http://localhost:8000/"],
     ("https://shop.example", "http://localhost:8000")),
])
def test_parse_origins(values: list[str], expected: Any) -> None:
    from walletctl.sandbox.config import parse_origins

    assert parse_origins(values) == expected


@pytest.mark.parametrize("bad", ["shop.example", "ftp://x", "https://x/path", "https://x:99999",
                                 "https://u@x"])
def test_parse_origin_refuses(bad: str) -> None:
    from walletctl.sandbox.config import parse_origin

    with pytest.raises(ValueError, match="must be an origin"):
        parse_origin(bad)
