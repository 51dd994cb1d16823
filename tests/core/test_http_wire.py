"""The exact requests each command sends, and how every kind of answer is mapped (HTTP level).

The real CLI (CliRunner) talks to a real loopback HTTP server (pytest-httpserver, or a raw
socket server for hangs and dropped connections); nothing is mocked in between.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request

from walletctl import __version__
from walletctl.constants import ExitCode

M, S, U = "M-1001", "S-01", "ops-bot"
APM = {"apmProvider": "WalletV2"}
REDIRECTS = {
    "returnUrl": "https://shop.example/back",
    "successUrl": "https://shop.example/ok",
    "pendingUrl": "https://shop.example/pending",
    "errorUrl": "https://shop.example/err",
    "cancelUrl": "https://shop.example/err",
    "refusedUrl": "https://shop.example/err",
}


def record(ref: str, type_: str, amount: Any, state: str = "Approved",
           invoice: str | None = None, currency: str = "EUR") -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": f"id-{ref}", "state": state, "currencyCode": currency,
        "transactionAmount": amount, "clientSystemTransactionId": ref, "type": type_,
        "transactionDateTime": "2024-05-01T10:20:30.1234567",
        "apmdetails": {"apmName": "WalletV2", "apmPayerAccountNumber": None},
    }
    if invoice:
        rec["clientSystemInvoiceId"] = invoice
    return rec


def followup_response(ref: str, state: str = "Approved") -> dict[str, Any]:
    return {"id": "f-1", "state": state, "providerStateCode": "CapturedByProvider",
            "currencyCode": "EUR", "clientSystemTransactionId": ref,
            "apmDetails": {"apmProviderName": "WalletV2", "apmPaymentMethod": "wallet"}}


@pytest.fixture
def base_url(httpserver: HTTPServer) -> str:
    return httpserver.url_for("/").rstrip("/")


def only(httpserver: HTTPServer, method: str) -> Request:
    found = [req for req, _ in httpserver.log if req.method == method]
    assert len(found) == 1, f"expected one {method}, got {[(r.method, r.path) for r in found]}"
    return found[0]


def assert_common_headers(req: Request, api_key: str, *, body: bool) -> None:
    h = req.headers
    assert h.get("Authorization") == f"PublicApiKey {api_key}", dict(h)
    assert h.get("Accept") == "application/json", dict(h)
    assert h.get("User-Agent") == f"walletctl/{__version__}", dict(h)
    if body:
        assert h.get("Content-Type") == "application/json", dict(h)


def assert_lookup_request(req: Request, ref: str, api_key: str) -> None:
    assert req.path == "/api/v5/apmTransactions", req.path
    assert req.args.to_dict(flat=False) == {
        "merchantId": [M], "storeId": [S], "clientSystemTransactionId": [ref]
    }, req.query_string
    assert req.get_data() == b"", req.get_data()
    assert_common_headers(req, api_key, body=False)


# ---------------------------------------------------------------------------- the requests


@pytest.mark.parametrize(("fmt", "amount"), [("minor", "1234"), ("decimal", "12.34")])
def test_checkout_sends_the_exact_body(
    httpserver: HTTPServer, base_url: str, make_cli: Any, api_key: str, fmt: str, amount: str
) -> None:
    httpserver.expect_request("/api/v5/checkout", method="POST").respond_with_json(
        {"redirectUrl": "http://gw.example/pay/abc"}
    )
    cli = make_cli(base_url, amount_format=fmt)
    result = cli("-o", "table", "checkout", "--amount", "12.34", "--ref", "ORDER-1", "--type",
                 "preauth", "--first-name", "Ada", "--mobile-phone", "44-7700900123",
                 "--house-number", "1", "--street", "Main St", "--city", "Berlin", "--zip",
                 "10115", "--state", "DE-BE", "--country", "deu", "--redirect-timeout", "600",
                 "--order-number", "INV-9")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert result.stdout == "http://gw.example/pay/abc\n", result.stdout
    req = only(httpserver, "POST")
    assert req.path == "/api/v5/checkout", req.path
    assert req.query_string == b"", req.query_string
    assert_common_headers(req, api_key, body=True)
    assert json.loads(req.get_data()) == {
        "merchantId": M, "storeId": S, "userId": U, "type": "ecom.preAuthorization",
        "amount": amount, "currencyCode": "EUR", "clientSystemTransactionId": "ORDER-1",
        "providerDiscretionaryData": "INV-9",
        "checkoutDetails": {"paymentMethod": "WalletV2", "cardholderFirstName": "Ada",
                            "cardholderMobilePhone": "44-7700900123",
                            "redirectUrlTimeout": 600},
        "addressDetails": {"billingAddress": {"houseNumber": "1", "street": "Main St",
                                              "city": "Berlin", "zipPostalCode": "10115",
                                              "state": "DE-BE", "countryCode": "DEU"}},
        "redirectDetails": REDIRECTS,
    }, req.get_data()


@pytest.mark.parametrize(
    ("op", "fmt", "records", "flags", "body_type", "amount", "new_ref"),
    [
        ("capture", "minor", [record("ORDER-1", "ecom.preAuthorisation", "1234")],
         ["--amount", "5"], "ecom.capture", "500", "ORDER-1-CAP1"),
        ("capture", "decimal", [record("ORDER-1", "ecom.preAuthorization", "12.34"),
                                record("ORDER-1-CAP1", "ecom.capture", "1.00",
                                       invoice="ORDER-1")],
         [], "ecom.capture", "11.34", "ORDER-1-CAP2"),
        ("refund", "minor", [record("ORDER-1", "ecom.sale", 1234)],
         ["--amount", "2.50", "--yes"], "ecom.refund", "250", "ORDER-1-REF1"),
        ("refund", "decimal", [record("ORDER-1", "ecom.sale", "12.34")],
         ["--yes", "--new-ref", "MY-REFUND"], "ecom.refund", "12.34", "MY-REFUND"),
        ("reverse", "minor", [record("ORDER-1", "ecom.preAuthorisation", "1234")],
         ["--yes"], "ecom.reversalPreauthorization", "1234", "ORDER-1-REV1"),
        ("reverse", "decimal", [record("ORDER-1", "ecom.preAuthorisation", "12.34")],
         ["--yes", "--amount", "12.34"], "ecom.reversalPreauthorization", "12.34",
         "ORDER-1-REV1"),
    ],
)
def test_followups_send_lookup_then_the_exact_body(
    httpserver: HTTPServer, base_url: str, make_cli: Any, api_key: str, op: str, fmt: str,
    records: list[dict[str, Any]], flags: list[str], body_type: str, amount: str, new_ref: str,
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(records)
    httpserver.expect_request("/api/v5/apmTransactions", method="POST").respond_with_json(
        followup_response(new_ref)
    )
    result = make_cli(base_url, amount_format=fmt)("-o", "json", op, "ORDER-1", *flags)
    assert result.exit_code == ExitCode.OK, result.stderr
    assert [r.method for r, _ in httpserver.log] == ["GET", "POST"], httpserver.log
    assert_lookup_request(only(httpserver, "GET"), "ORDER-1", api_key)
    post = only(httpserver, "POST")
    assert post.path == "/api/v5/apmTransactions", post.url
    assert post.query_string == b"", post.url
    assert_common_headers(post, api_key, body=True)
    assert json.loads(post.get_data()) == {
        "merchantId": M, "storeId": S, "userId": U, "type": body_type, "amount": amount,
        "currencyCode": "EUR", "clientSystemTransactionId": new_ref,
        "clientSystemInvoiceId": "ORDER-1", "apmDetails": APM,
    }, post.get_data()
    out = json.loads(result.stdout)
    assert out["clientSystemTransactionId"] == new_ref, out
    assert out["state"] == "Approved", out


def test_lookup_sends_the_exact_query_and_parses_every_variant(
    httpserver: HTTPServer, base_url: str, make_cli: Any, api_key: str
) -> None:
    body = [
        record("ORDER-1", "ecom.preAuthorisation", 1234),
        {"ID": "x2", "STATE": "Errored", "CurrencyCode": "eur", "TransactionAmount": "500",
         "ClientSystemTransactionId": "ORDER-1-CAP1", "Type": "ecom.capture",
         "clientSystemInvoiceId": "ORDER-1", "TransactionDateTime": "2024-05-01T11:00:00.1000000",
         "ApmDetails": {"apmProviderName": "WalletV2", "apmPayerAccountNumber": None,
                        "apmProviderTransactionId": None, "apmPayerID": None}},
    ]
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(body)
    result = make_cli(base_url)("-o", "json", "lookup", "ORDER-1")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert_lookup_request(only(httpserver, "GET"), "ORDER-1", api_key)
    rows = json.loads(result.stdout)
    assert [r["transactionAmount"] for r in rows] == ["12.34", "5.00"], rows
    assert rows[1]["state"] == "Errored", rows
    assert rows[1]["apmDetails"]["apmName"] == "WalletV2", rows
    assert rows[0]["transactionDateTime"] == "2024-05-01T10:20:30.1234567", rows


def test_profile_path_override_is_used(
    httpserver: HTTPServer, base_url: str, make_cli: Any, tmp_path: Any
) -> None:
    cli = make_cli(base_url)
    text = cli.config.read_text() + '[profiles.core.paths]\napm_transactions = "/v9/tx"\n'
    cli.config.write_text(text)
    httpserver.expect_request("/v9/tx", method="GET").respond_with_json([])
    result = cli("-o", "json", "lookup", "ORDER-1")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert only(httpserver, "GET").path == "/v9/tx"


# ------------------------------------------------------------------------- error mapping


def error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert lines, stderr
    assert lines[0].startswith("walletctl: error: "), stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


def test_gateway_error_object_4xx_is_exit_5_with_description_and_message(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/checkout").respond_with_json(
        {"code": "VAL-1", "description": "GeneralValidationError",
         "details": {"message": "userId is required"}}, status=400)
    result = make_cli(base_url)("checkout", "--amount", "1", "--ref", "ORDER-1")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    line = error_line(result.stderr)
    for part in ("HTTP 400", "GeneralValidationError", "userId is required", "VAL-1"):
        assert part in line, f"{part!r} missing from {line!r}"


@pytest.mark.parametrize(("status", "code"), [(401, ExitCode.AUTH), (403, ExitCode.AUTH),
                                              (404, ExitCode.DECLINED), (409, ExitCode.DECLINED),
                                              (422, ExitCode.DECLINED), (500, ExitCode.GATEWAY),
                                              (502, ExitCode.GATEWAY), (503, ExitCode.GATEWAY)])
def test_status_mapping(httpserver: HTTPServer, base_url: str, make_cli: Any, status: int,
                        code: ExitCode) -> None:
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_json(
        {"code": "E", "description": "Problem", "details": {"message": "details here"}},
        status=status)
    result = make_cli(base_url)("lookup", "ORDER-1")
    assert result.exit_code == code, (status, result.stderr)
    assert f"HTTP {status}" in error_line(result.stderr)
    if code == ExitCode.AUTH:
        assert "profile check" in result.stderr, result.stderr


def test_5xx_on_a_money_move_hints_lookup(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/checkout").respond_with_data("oops", status=502)
    result = make_cli(base_url)("checkout", "--amount", "1", "--ref", "ORDER-7")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert "walletctl lookup ORDER-7" in result.stderr, result.stderr


def test_429_reports_retry_after(httpserver: HTTPServer, base_url: str, make_cli: Any) -> None:
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_json(
        {"code": "RATE", "description": "TooManyRequests"}, status=429,
        headers={"Retry-After": "7"})
    result = make_cli(base_url)("lookup", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert "HTTP 429" in error_line(result.stderr)
    assert "rate limiting" in result.stderr, result.stderr
    assert "7 s" in result.stderr, result.stderr


def test_non_json_200_is_exit_6(httpserver: HTTPServer, base_url: str, make_cli: Any) -> None:
    httpserver.expect_request("/api/v5/checkout").respond_with_data("<html>ok</html>")
    result = make_cli(base_url)("checkout", "--amount", "1", "--ref", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert "not JSON" in error_line(result.stderr)
    assert "walletctl lookup ORDER-1" in result.stderr, "a money move must point at lookup"


def test_checkout_response_without_redirect_url_is_exit_6(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/checkout").respond_with_json({"url": "x"})
    result = make_cli(base_url)("checkout", "--amount", "1", "--ref", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert "redirectUrl" in error_line(result.stderr)


@pytest.mark.parametrize(
    ("body", "needle"),
    [({"records": []}, "record [0]"), ("a string", "not a JSON array"), ([42], "[0]"),
     ([{"state": "Approved", "currencyCode": "EUR", "transactionAmount": "12.5",
        "clientSystemTransactionId": "ORDER-1"}], "transactionAmount"),
     ([{"state": "Approved", "currencyCode": "EUR", "transactionAmount": "1",
        "clientSystemTransactionId": None}], "clientSystemTransactionId")],
)
def test_bad_lookup_response_is_exit_6_naming_the_field(
    httpserver: HTTPServer, base_url: str, make_cli: Any, body: Any, needle: str
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_json(body)
    result = make_cli(base_url)("lookup", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert needle in error_line(result.stderr), result.stderr


# ------------------------------------------------------------------- transport failures

PREAUTH = json.dumps([record("ORDER-1", "ecom.preAuthorisation", "1234")]).encode()


@pytest.mark.parametrize("mode", ["hang", "drop"])
def test_no_answer_on_a_money_post_is_unknown_outcome(
    raw_server: Any, make_cli: Any, mode: str
) -> None:
    server = raw_server(PREAUTH, mode)
    cli = make_cli(server.url)
    result = cli("--timeout", "0.5", "capture", "ORDER-1", "--amount", "1")
    assert result.exit_code == ExitCode.UNKNOWN_OUTCOME, result.stderr
    line = error_line(result.stderr)
    assert "unknown outcome" in line, line
    assert "ORDER-1-CAP1" in line, line
    assert "`walletctl lookup ORDER-1-CAP1" in result.stderr, result.stderr
    posts = [r for r in server.requests if r.startswith(b"POST")]
    assert len(posts) == 1, f"a money POST must never be retried blindly: {len(posts)} sent"


def test_checkout_with_no_answer_is_unknown_outcome(raw_server: Any, make_cli: Any) -> None:
    server = raw_server(b"[]", "drop")
    result = make_cli(server.url)("checkout", "--amount", "1", "--ref", "ORDER-9")
    assert result.exit_code == ExitCode.UNKNOWN_OUTCOME, result.stderr
    assert "walletctl lookup ORDER-9" in result.stderr, result.stderr
    assert len(server.requests) == 1, server.requests


@pytest.mark.parametrize("mode", ["hang", "drop"])
def test_no_answer_on_lookup_is_a_network_error_safe_to_repeat(
    raw_server: Any, make_cli: Any, mode: str
) -> None:
    server = raw_server(b"[]", mode, mode)
    result = make_cli(server.url)("--timeout", "0.5", "lookup", "ORDER-1")
    assert result.exit_code == ExitCode.NETWORK, result.stderr
    line = error_line(result.stderr)
    assert "no answer" in line, line
    assert "safe to run again" in result.stderr, result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("command", [["lookup", "ORDER-1"],
                                     ["checkout", "--amount", "1", "--ref", "ORDER-1"],
                                     ["capture", "ORDER-1"]])
def test_connection_refused_is_exit_7(make_cli: Any, command: list[str]) -> None:
    result = make_cli(f"http://127.0.0.1:{free_port()}")(*command)
    assert result.exit_code == ExitCode.NETWORK, result.stderr
    line = error_line(result.stderr)
    assert "could not connect" in line, line
    assert "nothing was sent" in result.stderr, result.stderr


def test_redirect_is_reported_not_followed(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/checkout").respond_with_data(
        "", status=301, headers={"Location": "https://gw.example/api/v5/checkout"})
    result = make_cli(base_url)("checkout", "--amount", "1", "--ref", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    line = error_line(result.stderr)
    assert "HTTP 301" in line, line
    assert "https://gw.example/api/v5/checkout" in line, line
    assert "base_url" in result.stderr, result.stderr
    assert len(httpserver.log) == 1, "a redirect of a money POST must not be followed"


def test_unparseable_followup_answer_points_at_lookup(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(
        [record("ORDER-1", "ecom.preAuthorisation", "1234")])
    httpserver.expect_request("/api/v5/apmTransactions", method="POST").respond_with_json(
        {"id": "x"})
    result = make_cli(base_url)("capture", "ORDER-1")
    assert result.exit_code == ExitCode.GATEWAY, result.stderr
    assert "state" in error_line(result.stderr), result.stderr
    assert "walletctl lookup ORDER-1-CAP1" in result.stderr, result.stderr


@pytest.mark.parametrize(("state", "code"), [("Approved", ExitCode.OK),
                                             # Pending is not done: look it up later
                                             ("Pending", ExitCode.UNKNOWN_OUTCOME),
                                             ("Declined", ExitCode.DECLINED),
                                             ("Errored", ExitCode.DECLINED)])
def test_followup_answer_state_decides_the_exit(
    httpserver: HTTPServer, base_url: str, make_cli: Any, state: str, code: ExitCode
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(
        [record("ORDER-1", "ecom.preAuthorisation", "1234")])
    httpserver.expect_request("/api/v5/apmTransactions", method="POST").respond_with_json(
        followup_response("ORDER-1-CAP1", state))
    result = make_cli(base_url)("-o", "json", "capture", "ORDER-1")
    assert result.exit_code == code, result.stderr
    assert json.loads(result.stdout)["state"] == state, result.stdout


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), ("0.5", 0.5), ("-3", 0.0), ("3600", 60.0), ("soon", None), ("", None),
     (None, None), ("nan", None), ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0)],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    from email.utils import parsedate_to_datetime

    from walletctl.client.gateway import parse_retry_after

    now = parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert parse_retry_after(value, now=now) == seconds, value


def test_gateway_text_is_never_read_as_markup(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    """A "[" in gateway text must be shown as is, not crash the table (Rich markup)."""
    rec = record("ORDER-1", "ecom.preAuthorisation", "1234")
    rec["providerStateCode"] = "[bold]Odd[/x]"
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json([rec])
    answer = followup_response("ORDER-1-CAP1", "Approved")
    answer["providerStateCode"] = "[/]Captured"
    httpserver.expect_request("/api/v5/apmTransactions", method="POST").respond_with_json(answer)
    cli = make_cli(base_url)
    shown = cli("-o", "table", "lookup", "ORDER-1")
    assert shown.exit_code == ExitCode.OK, shown.stderr
    assert "[bold]Odd[/x]" in shown.stdout, shown.stdout
    done = cli("-o", "table", "capture", "ORDER-1")
    assert done.exit_code == ExitCode.OK, done.stderr
    assert "([/]Captured)" in done.stdout, done.stdout


def test_open_refuses_a_non_http_redirect_url(
    httpserver: HTTPServer, base_url: str, make_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import webbrowser

    opened: list[str] = []

    def fake_open(url: str, *args: Any, **kwargs: Any) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    httpserver.expect_request("/api/v5/checkout").respond_with_json(
        {"redirectUrl": "file:///etc/passwd"})
    result = make_cli(base_url)("-o", "table", "checkout", "--amount", "1", "--ref", "R-1",
                                "--open")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert opened == [], f"opened {opened}"
    assert "not opening" in result.stderr, result.stderr


def test_gateway_error_text_stays_one_line_without_escapes(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_json(
        {"code": "E", "description": "Bad\r\nthing", "details": {"message": "\x1b[2Jcleared"}},
        status=400)
    result = make_cli(base_url)("lookup", "ORDER-1")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    line = error_line(result.stderr)
    assert "\x1b" not in result.stderr, repr(result.stderr)
    assert "\r" not in result.stderr, repr(result.stderr)
    assert "Bad thing" in line, repr(line)
    assert "cleared" in line, repr(line)


@pytest.mark.parametrize("status", [200, 400])
def test_absurdly_nested_json_is_a_response_error_not_a_crash(
    httpserver: HTTPServer, base_url: str, make_cli: Any, status: int
) -> None:
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_data(
        "[" * 100_000 + "]" * 100_000, status=status, content_type="application/json")
    result = make_cli(base_url)("-v", "lookup", "ORDER-1")
    expected = ExitCode.GATEWAY if status == 200 else ExitCode.DECLINED
    assert result.exit_code == expected, result.stderr[-500:]
    assert "internal error" not in result.stderr, result.stderr[-500:]


@pytest.mark.parametrize(
    ("scheme_lines", "header", "value"),
    [('scheme = "Bearer"', "Authorization", "Bearer {key}"),
     ('scheme = "header"\nheader = "X-Gateway-Key"', "X-Gateway-Key", "{key}"),
     ('scheme = "Basic"', "Authorization", "Basic {basic}")],
)
def test_other_auth_schemes_are_sent_and_masked(
    httpserver: HTTPServer, base_url: str, make_cli: Any, api_key: str,
    scheme_lines: str, header: str, value: str,
) -> None:
    import base64

    basic = base64.b64encode(f"ops-bot:{api_key}".encode()).decode()
    cli = make_cli(base_url)
    cli.config.write_text(
        cli.config.read_text().replace('scheme = "PublicApiKey"', scheme_lines)
    )
    httpserver.expect_request("/api/v5/apmTransactions").respond_with_json([])
    result = cli("-v", "-o", "json", "lookup", "ORDER-1")
    assert result.exit_code == ExitCode.OK, result.stderr
    sent = only(httpserver, "GET").headers.get(header)
    assert sent == value.format(key=api_key, basic=basic), sent
    assert api_key not in result.stderr, result.stderr
    assert basic not in result.stderr, result.stderr
    assert f"> {header.lower()}: " in result.stderr, result.stderr


def test_followups_sharing_the_original_reference_count(
    httpserver: HTTPServer, base_url: str, make_cli: Any
) -> None:
    """Spec 4.3: records "sharing the reference" (a pre-authorisation and a later capture)."""
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(
        [record("ORDER-1", "ecom.preAuthorisation", "1000"),
         record("ORDER-1", "ecom.capture", "400")])
    httpserver.expect_request("/api/v5/apmTransactions", method="POST").respond_with_json(
        followup_response("ORDER-1-CAP2"))
    result = make_cli(base_url)("-o", "json", "capture", "ORDER-1")
    assert result.exit_code == ExitCode.OK, result.stderr
    body = json.loads(only(httpserver, "POST").get_data())
    assert body["clientSystemTransactionId"] == "ORDER-1-CAP2", "CAP1 is taken by the capture"
    assert body["amount"] == "600", "4.00 of 10.00 is already captured"


def test_lookup_masks_a_secret_the_gateway_echoes_in_a_record(
    httpserver: HTTPServer, base_url: str, make_cli: Any, api_key: str
) -> None:
    """Fields beyond the spec are shown, but a secret or card number under a secret name
    (the key echoed back, a PAN) never is, in any format."""
    echoed = {**record("ORDER-9", "ecom.sale", 1000), "apiKey": api_key,
              "cardNumber": "4111111111111111", "note": "kept"}
    httpserver.expect_request("/api/v5/apmTransactions", method="GET").respond_with_json(
        [echoed])
    for fmt in ("json", "ndjson", "csv", "table"):
        result = make_cli(base_url)("-o", fmt, "lookup", "ORDER-9")
        assert result.exit_code == ExitCode.OK, result.stderr
        assert api_key not in result.stdout + result.stderr, fmt
        assert "4111111111111111" not in result.stdout + result.stderr, fmt
    rows = json.loads(make_cli(base_url)("-o", "json", "lookup", "ORDER-9").stdout)
    assert rows[0]["note"] == "kept", rows


def test_a_client_of_an_http_url_trusts_no_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    """An http URL's client gets a context that is never used for http and, were it ever
    used for https, verifies against no trusted root at all (fails closed); an https URL's
    store is loaded once per process and certificate-store setting."""
    import ssl

    from walletctl.client.tls import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    plain = tls_context("http://127.0.0.1:8765")
    assert plain.verify_mode == ssl.CERT_REQUIRED
    assert plain.check_hostname
    assert plain.cert_store_stats()["x509_ca"] == 0
    verifying = tls_context("https://gateway.example/api")
    assert verifying.verify_mode == ssl.CERT_REQUIRED
    assert verifying.check_hostname
    assert verifying.cert_store_stats()["x509_ca"] > 0  # the default store: certifi's roots
    assert tls_context(" HTTPS://other.example") is verifying
    assert tls_context("http://[::1]:9") is plain
