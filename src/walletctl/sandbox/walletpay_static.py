"""The browser wallet's static files (``/walletpay.js``, its TypeScript declaration, the demo).

``/walletpay.js`` is written as several files (``static/walletpay/NN-*.js``, one closure split
by responsibility) and served as their concatenation in name order: one script URL.

Each file is read once: GET and HEAD, a strong ``ETag`` (``If-None-Match`` -> 304), gzip when
the client accepts it (``Vary: Accept-Encoding``), and caching: ``max-age=300`` then
revalidation, or a year (``immutable``) for ``?v=<etag hash>`` URLs, which change with the file.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request
from fastapi.responses import Response

STATIC = Path(__file__).parent / "static"
SCRIPT_DIR = "walletpay"
SHORT_CACHE = "public, max-age=300"
LONG_CACHE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    media_type: str
    version: str  # first 16 hex digits of the SHA-256 of the body

    @property
    def etag(self) -> str:
        return f'"{self.version}"'

    @classmethod
    def load(cls, name: str, media_type: str) -> Asset:
        """``static/<name>``; a directory is served as its ``*.js`` files joined in name order."""
        body = client_script_source() if name == SCRIPT_DIR else (STATIC / name).read_bytes()
        return cls(body=body, gzipped=gzip.compress(body, compresslevel=9, mtime=0),
                   media_type=media_type, version=hashlib.sha256(body).hexdigest()[:16])


def client_script_source() -> bytes:
    """The bytes of ``/walletpay.js``: ``static/walletpay/*.js`` concatenated in name order."""
    parts = sorted((STATIC / SCRIPT_DIR).glob("*.js"))
    return b"".join(part.read_bytes() for part in parts)


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            return not (q.startswith("q=") and q[2:].strip() in ("0", "0.0", "0.00", "0.000"))
    return False


def serve(asset: Asset, request: Request, *, cors: bool = False) -> Response:
    """``asset`` for this GET/HEAD ``request`` (304 when the client's copy is current)."""
    versioned = request.query_params.get("v") == asset.version
    headers = {"ETag": asset.etag, "Vary": "Accept-Encoding",
               "Cache-Control": LONG_CACHE if versioned else SHORT_CACHE,
               "X-Content-Type-Options": "nosniff"}
    if cors:  # a script tag on any merchant origin may load it
        headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    tags = [t.strip() for t in request.headers.get("if-none-match", "").split(",")]
    if asset.etag in tags or f"W/{asset.etag}" in tags or "*" in tags:
        return Response(status_code=304, headers=headers)
    body = asset.body
    if _accepts_gzip(request.headers.get("accept-encoding", "")):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    headers["Content-Length"] = str(len(body))
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers, media_type=asset.media_type)
    return Response(body, headers=headers, media_type=asset.media_type)
