"""The batch engines against gateways that misbehave at the HTTP level, driven from outside:
real ``walletctl`` processes against a plain ``http.server`` gateway that keeps its own
ledger (so "applied twice" and "never sent" are counted where the money is).

Found by a fresh-clone trial of the aiohttp batch transport: a lookup that connected and got
no answer stopped the batch with exit 7 and "nothing was sent" (after captures had been
applied); a 404 from a wrong path prefix was a final refusal that no later run sent; a
redirect was retried eight times per row with its reason never shown; an answer with a long
header line failed in the batch but not in the single command.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from batch_helpers import http_gateway, write_profile

from cli_runner import run_walletctl


@dataclass
class Behaviour:
    prefix: str = ""  # the path prefix the gateway serves under
    redirect: bool = False  # every request: 301 to https
    drop_post_after_apply: bool = False  # apply the capture, then close without answering
    drop_lookups: int = 0  # per reference: close the first N lookups without answering
    long_header: bool = False  # every answer carries a 16 KiB header line
    posts: Counter[str] = field(default_factory=Counter)  # per new reference
    applied: dict[str, dict[str, Any]] = field(default_factory=dict)
    lookups: Counter[str] = field(default_factory=Counter)


class _Gateway(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    how: Behaviour

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.how.long_header:
            self.send_header("X-Padding", "a" * 16384)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> str | None:
        path = urlsplit(self.path).path
        if self.how.redirect:
            self._answer(301, {"code": "GEN-301"}, {"Location": "https://elsewhere.test/"})
            return None
        if path != self.how.prefix + "/api/v5/apmTransactions":
            self._answer(404, {"code": "GEN-404", "description": "NoSuchPath"})
            return None
        return path

    def _drop(self) -> None:
        self.close_connection = True  # closed without a byte of answer

    def do_POST(self) -> None:  # a follow-up
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self._route() is None:
            return
        ref = body["clientSystemTransactionId"]
        self.how.posts[ref] += 1
        record = {"id": f"T-{ref}", "state": "Approved", "type": body["type"],
                  "clientSystemTransactionId": ref,
                  "clientSystemInvoiceId": body["clientSystemInvoiceId"],
                  "transactionAmount": body["amount"], "currencyCode": body["currencyCode"],
                  "transactionDateTime": "2026-11-23T01:00:00.0000000"}
        self.how.applied.setdefault(ref, record)
        if self.how.drop_post_after_apply:
            return self._drop()
        self._answer(200, {**record, "amount": body["amount"],
                           "providerStateCode": "CapturedByProvider"})

    def do_GET(self) -> None:  # a lookup
        if self._route() is None:
            return
        ref = parse_qs(urlsplit(self.path).query)["clientSystemTransactionId"][0]
        self.how.lookups[ref] += 1
        if self.how.lookups[ref] <= self.how.drop_lookups:
            return self._drop()
        found = [r for r in self.how.applied.values()
                 if ref in (r["clientSystemTransactionId"], r["clientSystemInvoiceId"])]
        original = {"id": f"T-{ref}", "state": "Approved", "type": "ecom.preauthorization",
                    "clientSystemTransactionId": ref, "transactionAmount": "1000",
                    "currencyCode": "EUR", "transactionDateTime": "2026-11-23T00:00:00.0000000"}
        if ref.startswith("cap-"):  # a new reference: only what was applied
            self._answer(200, found) if found else self._answer(404, {"code": "TRX-404"})
        else:  # an original pre-authorisation of 10.00 EUR, and what was done on it
            self._answer(200, [original, *found])


@pytest.fixture
def gateway() -> Iterator[tuple[str, Behaviour]]:
    how = Behaviour()
    with http_gateway(type("G", (_Gateway,), {"how": how})) as url:
        yield url, how


def walletctl(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    cfg = write_profile(tmp, url, timeout=5.0)
    env = dict(os.environ, NO_COLOR="1")
    return run_walletctl(["--config", str(cfg), "-o", "json", *args], env=env)


def rows(tmp: Path, *refs: str) -> Path:
    src = tmp / "rows.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"{r},2.00,EUR\n" for r in refs))
    return src


def test_a_lookup_that_connected_but_got_no_answer_is_not_an_unreachable_gateway(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, how = gateway
    how.drop_post_after_apply, how.drop_lookups = True, 6
    done = walletctl(tmp_path, url, "capture", "--batch", str(rows(tmp_path, "HD-1", "HD-2")))
    assert "nothing was sent" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr  # found by a later lookup: applied once each
    assert json.loads(done.stdout)["confirmed"] == 2
    assert set(how.posts.values()) == {1}, how.posts


def test_a_404_is_not_final_the_run_after_the_base_url_is_fixed_sends_it(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, how = gateway
    how.prefix = "/gw"
    src = rows(tmp_path, "HP-1", "HP-2")
    wrong = walletctl(tmp_path, url, "capture", "--batch", str(src))
    assert wrong.returncode == 5, wrong.stderr  # refused, as the gateway said
    assert "sent again by the next run" in wrong.stderr, wrong.stderr
    assert not how.applied
    fixed = walletctl(tmp_path, url + "/gw", "capture", "--batch", str(src))
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["confirmed"] == 2
    assert sorted(how.posts.values()) == [1, 1], how.posts  # once each, under /gw


def test_a_redirect_stops_the_batch_at_once_and_names_itself(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, how = gateway
    how.redirect = True
    src = rows(tmp_path, *(f"HR-{i}" for i in range(20)))
    done = walletctl(tmp_path, url, "capture", "--batch", str(src), "--concurrency", "2")
    assert done.returncode == 6, done.stderr
    assert "redirect to https://elsewhere.test/ (not followed)" in done.stderr, done.stderr
    assert "base_url" in done.stderr, done.stderr  # the single command's hint
    assert "Traceback" not in done.stderr
    assert sum(how.posts.values()) == 0  # never processed: the gateway only redirected
    how.redirect = False
    again = walletctl(tmp_path, url, "capture", "--batch", str(src))
    assert again.returncode == 0, again.stderr
    assert sorted(set(how.posts.values())) == [1], how.posts  # each row applied once


def test_a_long_header_line_is_read_by_the_batch_as_by_the_single_command(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, how = gateway
    how.long_header = True
    single = walletctl(tmp_path, url, "lookup", "HL-0")
    assert single.returncode == 0, single.stderr
    done = walletctl(tmp_path, url, "capture", "--batch", str(rows(tmp_path, "HL-1", "HL-2")))
    assert done.returncode == 0, done.stderr
    assert set(how.posts.values()) == {1}, how.posts
    refs = tmp_path / "refs.csv"
    refs.write_text("ref\nHL-1\nHL-2\n")
    looked = walletctl(tmp_path, url, "lookup", "--batch", str(refs))
    assert looked.returncode == 0, looked.stderr


def test_a_dry_run_shows_each_row_with_its_own_profile(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, _ = gateway
    cfg = write_profile(tmp_path, url)
    with cfg.open("a") as fh:
        fh.write(f'\n[profiles.other]\nbase_url = "{url}"\nmerchant_id = "M-OTHER"\n'
                 'store_id = "S-09"\nuser_id = "u9"\namount_format = "decimal"\n'
                 '[profiles.other.auth]\nscheme = "PublicApiKey"\nkey = "k-other"\n')
    src = tmp_path / "rows.csv"
    src.write_text("ref,amount,currency,profile\nDP-1,1.234,BHD,other\nDP-2,2.00,EUR,\n")
    env = dict(os.environ, NO_COLOR="1")
    done = run_walletctl(["--config", str(cfg), "-o", "ndjson", "capture", "--batch",
                          str(src), "--dry-run", "--offline"], env=env)
    assert done.returncode == 0, done.stderr
    bodies = {r["ref"]: r["request"] for r in map(json.loads, done.stdout.splitlines())
              if "request" in r}
    assert (bodies["DP-1"]["merchantId"], bodies["DP-1"]["amount"]) == ("M-OTHER", "1.234")
    assert (bodies["DP-2"]["merchantId"], bodies["DP-2"]["amount"]) == ("M-BATCH", "200")


def test_an_ndjson_run_ends_with_its_summary_on_one_line(
    tmp_path: Path, gateway: tuple[str, Behaviour]
) -> None:
    url, _ = gateway
    cfg = write_profile(tmp_path, url)
    env = dict(os.environ, NO_COLOR="1")
    done = run_walletctl(["--config", str(cfg), "-o", "ndjson", "capture", "--batch",
                          str(rows(tmp_path, "NJ-1"))], env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert json.loads(lines[0])["confirmed"] == 1


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_a_self_signed_gateway_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    import ssl

    how = Behaviour()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*_self_signed(tmp_path))
    with http_gateway(type("G", (_Gateway,), {"how": how}), tls=context) as url:
        done = walletctl(tmp_path, url, "capture", "--batch", str(rows(tmp_path, "TS-1")))
        single = walletctl(tmp_path, url, "capture", "TS-2", "--amount", "1.00", "--yes")
    for proc in (done, single):
        assert proc.returncode == 7, proc.stderr
        assert "certificate verify failed" in proc.stderr.lower(), proc.stderr
        assert "nothing was sent" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert not how.posts
    assert "Cannot connect to host" not in done.stderr, done.stderr  # worded like httpx


def test_the_store_ssl_cert_file_names_is_the_one_trusted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifying context is built once per certificate store, not once per process: the
    same gateway is refused with the default store, then reached once ``SSL_CERT_FILE`` names
    its certificate (tests/core: the context is kept between clients)."""
    import ssl

    how = Behaviour()
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with http_gateway(type("G", (_Gateway,), {"how": how}), tls=context) as url:
        refused = walletctl(tmp_path, url, "lookup", "TS-3")
        batch_refused = walletctl(tmp_path, url, "lookup", "--batch", str(rows(tmp_path, "TS-4")))
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        trusted = walletctl(tmp_path, url, "lookup", "TS-3")
        batch_trusted = walletctl(tmp_path, url, "lookup", "--batch", str(rows(tmp_path, "TS-4")))
    for proc in (refused, batch_refused):
        assert proc.returncode == 7, proc.stderr
        assert "certificate verify failed" in proc.stderr.lower(), proc.stderr
    for proc in (trusted, batch_trusted):  # the batch's client verifies as the single one
        assert proc.returncode == 0, proc.stderr
    assert how.lookups["TS-3"] == how.lookups["TS-4"] == 1  # the refused never reached it


def test_the_async_client_sends_a_request_model_as_the_template_would(
    gateway: tuple[str, Behaviour]
) -> None:
    """``AsyncGatewayClient.followup(model)`` and the batch's template are one send path."""
    import asyncio
    from dataclasses import replace
    from decimal import Decimal

    from batch_fakes import PROFILE

    from walletctl.client.aio import AsyncGatewayClient
    from walletctl.ops.batch.journal import JournalRow
    from walletctl.ops.batch.runner import RequestTemplate, build_request

    url, how = gateway
    profile = replace(PROFILE, base_url=url)
    row = JournalRow("AM-1#0", 2, "AM-1", "cap-0000aaaa-0123456789abcdef", Decimal("2.00"),
                     "EUR", None, "planned", 0, None, None, None)

    async def both() -> tuple[str, str]:
        async with AsyncGatewayClient(profile, auth_header=None) as client:
            first = await client.followup(build_request(profile, "capture", row))
            second = await client.followup_call(RequestTemplate(profile, "capture").call(
                replace(row, new_ref="cap-0000aaaa-fedcba9876543210")))
            return first.state, second.state

    assert asyncio.run(both()) == ("Approved", "Approved")
    assert sorted(how.posts) == ["cap-0000aaaa-0123456789abcdef", "cap-0000aaaa-fedcba9876543210"]
