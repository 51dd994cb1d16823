"""The TLS context a client verifies servers with: httpx's defaults, built once per process and
only for an https URL.

httpx builds a fresh context for every client it opens, loading the whole certificate store
(certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``): about 65 ms of CPU, more than the
rest of a ``walletctl lookup`` against a local sandbox, and paid again by every client of a
process. Here it is built the first time an https URL asks for it and kept, one per
certificate-store setting. An http URL gets a context that verifies like the others but
trusts no certificate at all: it is never used for http, and if a request ever went to an
https address through it, it would fail closed.
"""

from __future__ import annotations

import os
import ssl
from functools import cache


def tls_context(url: str) -> ssl.SSLContext:
    """The context for a client of ``url`` (httpx's ``verify=``)."""
    if not url.strip().lower().startswith("https:"):
        return _trusts_nothing()
    return _verifying(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@cache
def _trusts_nothing() -> ssl.SSLContext:
    """CERT_REQUIRED and hostname checks, and no trusted root."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@cache
def _verifying(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default context for this certificate store (httpx reads the same variables)."""
    from walletctl.client._httpx import httpx

    return httpx.create_ssl_context(trust_env=True)
