"""Every redirect-wallet command through the real CLI against the real sandbox (in-process)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from walletctl import __version__
from walletctl.cli.state import ENV
from walletctl.constants import ExitCode


def ledger_refs(sandbox: Any) -> list[str]:
    return [t["reference"] for t in sandbox.ledger()["transactions"]]


def lookup_json(cli: Any, ref: str) -> list[dict[str, Any]]:
    result = cli("-o", "json", "lookup", ref)
    assert result.exit_code == ExitCode.OK, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


# -------------------------------------------------------------------------------- checkout


def test_checkout_table_prints_only_the_redirect_url_on_stdout(cli: Any, sandbox: Any) -> None:
    result = cli("-o", "table", "checkout", "--amount", "12.34", "--ref", "ORDER-1")
    assert result.exit_code == ExitCode.OK, result.stderr
    url = result.stdout.strip()
    assert url.startswith("http://testserver/pay/"), result.stdout
    assert result.stdout.count("\n") == 1, result.stdout
    assert "ORDER-1 created (12.34 EUR, sale)" in result.stderr, result.stderr
    assert sandbox.client.get(url.removeprefix("http://testserver")).status_code == 200
    assert ledger_refs(sandbox) == ["ORDER-1"]


def test_checkout_json_is_one_document(cli: Any) -> None:
    result = cli("-o", "json", "checkout", "--amount", "1000", "--currency", "jpy", "--ref",
                 "ORDER-J", "--type", "preauth")
    assert result.exit_code == ExitCode.OK, result.stderr
    doc = json.loads(result.stdout)
    assert doc["clientSystemTransactionId"] == "ORDER-J", doc
    assert doc["type"] == "ecom.preAuthorization", doc
    assert (doc["amount"], doc["currencyCode"]) == ("1000", "JPY"), doc
    assert doc["redirectUrl"].startswith("http://testserver/pay/"), doc
    assert result.stderr == "", result.stderr


def dry_body(result: Any) -> dict[str, Any]:
    assert result.exit_code == ExitCode.OK, result.stderr
    doc = json.loads(result.stdout)
    assert doc["dryRun"] is True, doc
    body: dict[str, Any] = doc["request"]["body"]
    return body


def test_checkout_from_json_file_with_flags_overriding(
    cli: Any, sandbox: Any, tmp_path: Path
) -> None:
    request = {
        "amount": "20.00", "clientSystemTransactionId": "FILE-1", "type": "ecom.preAuthorization",
        "checkoutDetails": {"cardholderEmail": "ada@example.com", "language": "de"},
        "addressDetails": {"billingAddress": {"houseNumber": "1", "street": "Main St",
                                              "city": "Berlin", "zipPostalCode": "10115",
                                              "countryCode": "DEU"}},
        "shoppingCartDetails": {"itemDetails": [
            {"productId": "SKU-1", "productName": "Widget", "productQuantity": 2,
             "unitAmount": "2.50", "totalAmount": "5.00"}]},
    }
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request))
    body = dry_body(cli("-o", "json", "checkout", "--from-file", str(path), "--amount", "5",
                        "--city", "Munich", "--dry-run"))
    assert body["amount"] == "500", "flag --amount must override the file"
    assert body["clientSystemTransactionId"] == "FILE-1", body
    assert body["type"] == "ecom.preAuthorization", "the file's type must survive"
    assert body["addressDetails"]["billingAddress"]["city"] == "Munich", body
    assert body["addressDetails"]["billingAddress"]["street"] == "Main St", body
    assert body["checkoutDetails"] == {"paymentMethod": "WalletV2", "language": "de",
                                       "cardholderEmail": "ada@example.com"}, body
    assert body["shoppingCartDetails"]["itemDetails"][0]["unitAmount"] == "250", body
    assert body["redirectDetails"]["successUrl"] == "https://shop.example/ok", body
    assert ledger_refs(sandbox) == [], "--dry-run must send nothing"
    result = cli("checkout", "--from-file", str(path), "--amount", "5")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert ledger_refs(sandbox) == ["FILE-1"]


def test_checkout_from_toml_file(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "req.toml"
    path.write_text(
        'amount = "7.50"\nclientSystemTransactionId = "TOML-1"\ncurrencyCode = "GBP"\n'
        '[redirectDetails]\nsuccessUrl = "https://other.example/ok"\n'
    )
    body = dry_body(cli("-o", "json", "checkout", "--from-file", str(path), "--ref", "TOML-2",
                        "--dry-run"))
    assert body["clientSystemTransactionId"] == "TOML-2", "flag --ref must override the file"
    assert (body["amount"], body["currencyCode"]) == ("750", "GBP"), body
    assert body["type"] == "ecom.sale", body
    assert body["redirectDetails"]["successUrl"] == "https://other.example/ok", body
    assert body["redirectDetails"]["errorUrl"] == "https://shop.example/err", body


def test_checkout_toml_float_amount_is_refused_by_field(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "req.toml"
    path.write_text('amount = 7.5\nclientSystemTransactionId = "TOML-1"\n')
    result = cli("checkout", "--from-file", str(path))
    assert result.exit_code == ExitCode.VALIDATION, result.stderr
    assert "amount" in result.stderr, result.stderr
    assert "float" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("content", "suffix", "needle"),
    [("{not json", ".json", "invalid JSON"), ("a = [", ".toml", "invalid TOML"),
     ("[1, 2]", ".json", "one JSON/TOML object")],
)
def test_checkout_bad_request_file(cli: Any, tmp_path: Path, content: str, suffix: str,
                                   needle: str) -> None:
    path = tmp_path / f"req{suffix}"
    path.write_text(content)
    result = cli("checkout", "--from-file", str(path))
    assert result.exit_code == ExitCode.VALIDATION, result.stderr
    assert needle in result.stderr, result.stderr
    assert "--from-file" in result.stderr, result.stderr


def test_checkout_missing_file_is_usage(cli: Any, tmp_path: Path) -> None:
    result = cli("checkout", "--from-file", str(tmp_path / "nope.json"))
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert "cannot read" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [(["--amount", "1", "--ref", "R-1", "--type", "refund"], "--type"),
     (["--amount", "1.234", "--ref", "R-1"], "amount"),
     (["--amount", "1", "--ref", "R-1", "--house-number", "1", "--street", "S", "--city", "C",
       "--zip", "1", "--country", "DE"], "countryCode"),
     (["--amount", "1", "--ref", "R-1", "--state", "Bavaria"], "state"),
     (["--amount", "1", "--ref", "R-1", "--mobile-phone", "+49 170"], "cardholderMobilePhone"),
     (["--amount", "1", "--ref", "R-1", "--redirect-timeout", "901"], "redirectUrlTimeout"),
     (["--amount", "1", "--ref", "R-1", "--currency", "EURO"], "--currency")],
)
def test_checkout_invalid_flags_name_the_field(cli: Any, sandbox: Any, args: list[str],
                                               field: str) -> None:
    result = cli("checkout", *args)
    assert result.exit_code == ExitCode.VALIDATION, result.stderr
    assert field in result.stderr, result.stderr
    assert ledger_refs(sandbox) == [], "nothing may be sent for an invalid request"


@pytest.mark.parametrize(("args", "flags"), [(["--ref", "R-1"], "--amount"),
                                             (["--amount", "1"], "--ref")])
def test_checkout_without_a_required_flag_is_usage(cli: Any, sandbox: Any, args: list[str],
                                                    flags: str) -> None:
    result = cli("checkout", *args)
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert result.stderr.startswith(f"walletctl: error: checkout: missing option {flags} "
                                    "(required: "), result.stderr
    assert ledger_refs(sandbox) == [], "nothing may be sent without the required values"


def test_checkout_needs_currency_when_profile_has_none(make_cli: Any, sandbox: Any) -> None:
    cli = make_cli("http://testserver", currency=None)
    result = cli("checkout", "--amount", "1", "--ref", "R-1")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert "missing option --currency (required: profile 'core' has no default currency)" \
        in result.stderr, result.stderr


def test_checkout_needs_redirect_urls(make_cli: Any, sandbox: Any) -> None:
    cli = make_cli("http://testserver", redirects={})
    result = cli("checkout", "--amount", "1", "--ref", "R-1")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert ("missing options --success-url, --error-url, --pending-url, --return-url "
            "(required: profile 'core' has no [redirects] for them)") in result.stderr
    assert "walletctl profile set core redirects.success_url" in result.stderr, result.stderr
    result = cli("-o", "json", "checkout", "--amount", "1", "--ref", "R-1", "--success-url",
                 "https://a.example/s", "--error-url", "https://a.example/e", "--pending-url",
                 "https://a.example/p", "--return-url", "https://a.example/r", "--dry-run")
    body = dry_body(result)
    assert body["redirectDetails"]["cancelUrl"] == "https://a.example/e", body
    assert body["redirectDetails"]["refusedUrl"] == "https://a.example/e", body


def test_checkout_open_launches_a_browser(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    opened: list[str] = []

    def fake_open(url: str, *args: Any, **kwargs: Any) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    result = cli("-o", "table", "checkout", "--amount", "1", "--ref", "R-OPEN", "--open")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert opened == [result.stdout.strip()], opened


# ------------------------------------------------------------------------------ follow-ups


def test_capture_defaults_to_the_full_remaining_amount(cli: Any, make_order: Any) -> None:
    make_order("ORDER-1", "12.34")
    first = cli("-o", "json", "capture", "ORDER-1", "--amount", "2")
    assert first.exit_code == ExitCode.OK, first.stderr
    assert json.loads(first.stdout)["clientSystemTransactionId"] == "ORDER-1-CAP1"
    second = cli("-o", "json", "capture", "ORDER-1")
    assert second.exit_code == ExitCode.OK, second.stderr
    doc = json.loads(second.stdout)
    assert doc["clientSystemTransactionId"] == "ORDER-1-CAP2", doc
    assert doc["amount"] == "10.34", doc
    assert doc["state"] == "Approved", doc
    rows = lookup_json(cli, "ORDER-1")
    assert [r["clientSystemTransactionId"] for r in rows] == ["ORDER-1", "ORDER-1-CAP1",
                                                             "ORDER-1-CAP2"], rows


def test_capture_table_shows_what_remains(cli: Any, make_order: Any) -> None:
    make_order("ORDER-1", "12.34")
    result = cli("-o", "table", "capture", "ORDER-1", "--amount", "2")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "Captured 2.00 EUR of ORDER-1 as ORDER-1-CAP1: Approved" in result.stdout
    assert "Remaining capturable: 10.34 EUR" in result.stdout, result.stdout


def test_followup_results_byte_for_byte(cli: Any, make_order: Any) -> None:
    """The results of capture/refund/reverse, rendered by render/followup.py (moved out of
    cli/followup.py): pinned to the byte in the table, CSV and NDJSON forms."""
    import re

    make_order("ORDER-7", "20.00")
    make_order("SALE-7", "9.00", "sale")
    make_order("AUTH-7", "5.00")
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    expected = {
        ("-o", "table", "capture", "ORDER-7", "--amount", "2.50"):
            "Captured 2.50 EUR of ORDER-7 as ORDER-7-CAP1: Approved (CapturedByProvider)\n"
            "Remaining capturable: 17.50 EUR\n",
        ("-o", "csv", "capture", "ORDER-7", "--amount", "1"):
            "operation,clientSystemInvoiceId,clientSystemTransactionId,amount,currencyCode,"
            "state,providerStateCode,id\n"
            "capture,ORDER-7,ORDER-7-CAP2,1.00,EUR,Approved,CapturedByProvider,ID\n",
        ("-o", "ndjson", "refund", "ORDER-7", "--amount", "0.50", "--yes"):
            '{"operation": "refund", "clientSystemInvoiceId": "ORDER-7", '
            '"clientSystemTransactionId": "ORDER-7-REF1", "amount": "0.50", "currencyCode": '
            '"EUR", "state": "Approved", "providerStateCode": "RefundedByProvider", "id": '
            '"ID"}\n',
        ("-o", "table", "refund", "SALE-7", "--yes"):
            "Refunded 9.00 EUR of SALE-7 as SALE-7-REF1: Approved (RefundedByProvider)\n"
            "Remaining refundable: 0.00 EUR\n",
        ("-o", "table", "reverse", "AUTH-7", "--yes"):
            "Reversed 5.00 EUR of AUTH-7 as AUTH-7-REV1: Approved (ReversedByProvider)\n",
    }
    for argv, out in expected.items():
        result = cli(*argv)
        assert result.exit_code == ExitCode.OK, (argv, result.stderr)
        assert uuid.sub("ID", result.stdout) == out, (argv, result.stdout)


def test_new_ref_is_used_and_a_used_one_refused(cli: Any, make_order: Any, sandbox: Any) -> None:
    make_order("ORDER-1")
    result = cli("-o", "json", "capture", "ORDER-1", "--amount", "1", "--new-ref", "MY-CAP")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert json.loads(result.stdout)["clientSystemTransactionId"] == "MY-CAP"
    again = cli("capture", "ORDER-1", "--amount", "1", "--new-ref", "MY-CAP")
    assert again.exit_code == ExitCode.VALIDATION, again.stderr
    assert "--new-ref" in again.stderr, again.stderr
    assert "MY-CAP" in again.stderr, again.stderr
    same = cli("capture", "ORDER-1", "--amount", "1", "--new-ref", "ORDER-1")
    assert same.exit_code == ExitCode.VALIDATION, same.stderr
    assert ledger_refs(sandbox).count("MY-CAP") == 1


def test_refund_and_reverse_derive_references(cli: Any, make_order: Any) -> None:
    make_order("SALE-1", "30.00", "sale")
    for n, amount in ((1, "10"), (2, "5")):
        result = cli("-o", "json", "refund", "SALE-1", "--amount", amount, "--yes")
        assert result.exit_code == ExitCode.OK, result.stderr
        assert json.loads(result.stdout)["clientSystemTransactionId"] == f"SALE-1-REF{n}"
    rest = cli("-o", "json", "refund", "SALE-1", "--yes")
    assert json.loads(rest.stdout)["amount"] == "15.00", rest.stdout
    make_order("AUTH-1", "8.00")
    rev = cli("-o", "json", "reverse", "AUTH-1", "--yes")
    assert rev.exit_code == ExitCode.OK, rev.stderr
    doc = json.loads(rev.stdout)
    assert doc["clientSystemTransactionId"] == "AUTH-1-REV1", doc
    assert doc["amount"] == "8.00", doc


def refusal(cli: Any, sandbox: Any, *args: str) -> str:
    before = ledger_refs(sandbox)
    result = cli(*args)
    assert result.exit_code == ExitCode.DECLINED, (args, result.stdout, result.stderr)
    assert ledger_refs(sandbox) == before, "a pre-flight refusal must send nothing"
    line = result.stderr.splitlines()[0]
    assert line.startswith("walletctl: error: "), result.stderr
    return str(result.stderr)


def test_preflight_refusals_show_the_numbers(cli: Any, sandbox: Any, make_order: Any) -> None:
    make_order("AUTH-1", "12.34")
    assert cli("capture", "AUTH-1", "--amount", "5").exit_code == ExitCode.OK
    err = refusal(cli, sandbox, "capture", "AUTH-1", "--amount", "50")
    assert "50.00 EUR" in err, err
    assert "7.34 EUR" in err, err
    err = refusal(cli, sandbox, "refund", "AUTH-1", "--amount", "6", "--yes")
    assert "6.00 EUR" in err, err
    assert "captured − refunded = 5.00 EUR" in err, err
    err = refusal(cli, sandbox, "reverse", "AUTH-1", "--yes")
    assert "captured 5.00 EUR" in err, err
    assert "cannot be reversed" in err, err
    err = refusal(cli, sandbox, "capture", "AUTH-1", "--amount", "1", "--currency", "USD")
    assert "USD" in err, err
    assert "EUR" in err, err
    make_order("SALE-1", "3.00", "sale")
    err = refusal(cli, sandbox, "capture", "SALE-1")
    assert "is a sale" in err, err
    make_order("PEND-1", "3.00", action=None)
    err = refusal(cli, sandbox, "capture", "PEND-1")
    assert "Pending" in err, err
    assert "walletctl lookup PEND-1" in err, err
    err = refusal(cli, sandbox, "capture", "AUTH-1-CAP1")
    assert "is a capture" in err, err


def test_followup_of_unknown_reference(cli: Any, sandbox: Any) -> None:
    result = cli("capture", "NOPE")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    assert "NOPE" in result.stderr, result.stderr


def test_followup_amount_with_too_many_decimals(cli: Any, make_order: Any) -> None:
    make_order("AUTH-1")
    result = cli("capture", "AUTH-1", "--amount", "1.001")
    assert result.exit_code == ExitCode.VALIDATION, result.stderr
    assert "--amount" in result.stderr, result.stderr


def test_gateway_refusal_after_send_is_declined(cli: Any, make_order: Any) -> None:
    make_order("MAGIC-1", "10.02")  # sandbox magic: every capture is refused by the provider
    result = cli("capture", "MAGIC-1")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    assert "RefusedByProvider" in result.stderr, result.stderr


@pytest.mark.parametrize("op", ["refund", "reverse"])
def test_confirmation_refused_without_a_terminal(cli: Any, sandbox: Any, make_order: Any,
                                                 op: str) -> None:
    make_order("ORDER-1", "9.00", "sale" if op == "refund" else "preauth")
    before = ledger_refs(sandbox)
    result = cli(op, "ORDER-1")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert "--yes" in result.stderr, result.stderr
    assert ledger_refs(sandbox) == before


@pytest.mark.parametrize("op", ["refund", "reverse"])
def test_confirmation_prompt_on_a_terminal(cli: Any, sandbox: Any, make_order: Any,
                                           op: str) -> None:
    make_order("ORDER-1", "9.00", "sale" if op == "refund" else "preauth")
    ENV.stdin_isatty = True
    before = ledger_refs(sandbox)
    no = cli(op, "ORDER-1", input="n\n")
    assert no.exit_code == ExitCode.USAGE, no.stderr
    assert "cancelled" in no.stderr, no.stderr
    assert ledger_refs(sandbox) == before, "answering n must send nothing"
    assert "9.00 EUR" in no.stderr, "the summary must show the amount"
    assert "Proceed" in no.stderr, no.stderr
    yes = cli("-o", "json", op, "ORDER-1", input="y\n")
    assert yes.exit_code == ExitCode.OK, yes.stderr
    assert json.loads(yes.stdout)["state"] == "Approved", yes.stdout
    assert len(ledger_refs(sandbox)) == len(before) + 1


def test_capture_needs_no_confirmation(cli: Any, make_order: Any) -> None:
    make_order("ORDER-1")
    assert cli("capture", "ORDER-1").exit_code == ExitCode.OK


def test_followup_dry_run_sends_nothing(cli: Any, sandbox: Any, make_order: Any) -> None:
    make_order("ORDER-1", "4.00")
    before = ledger_refs(sandbox)
    result = cli("-o", "json", "reverse", "ORDER-1", "--dry-run")
    body = dry_body(result)
    assert body["type"] == "ecom.reversalPreauthorization", body
    assert body["amount"] == "400", body
    assert ledger_refs(sandbox) == before
    table = cli("-o", "table", "capture", "ORDER-1", "--dry-run")
    assert table.exit_code == ExitCode.OK, table.stderr
    assert table.stdout.startswith("POST http://testserver/api/v5/apmTransactions\n"), table.stdout
    assert "nothing was sent" in table.stderr, table.stderr
    assert ledger_refs(sandbox) == before


def test_followup_without_ref_is_usage(cli: Any) -> None:
    result = cli("capture", "--amount", "1")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert "REF" in result.stderr, result.stderr


# ---------------------------------------------------------------------------------- lookup


@pytest.fixture
def captured_order(cli: Any, make_order: Any) -> str:
    make_order("ORDER-1", "12.34")
    assert cli("capture", "ORDER-1", "--amount", "2").exit_code == ExitCode.OK
    return "ORDER-1"


def test_lookup_json(cli: Any, captured_order: str) -> None:
    rows = lookup_json(cli, captured_order)
    assert [(r["type"], r["transactionAmount"], r["state"]) for r in rows] == [
        ("ecom.preAuthorisation", "12.34", "Approved"), ("ecom.capture", "2.00", "Approved")
    ], rows


def test_lookup_ndjson(cli: Any, captured_order: str) -> None:
    result = cli("-o", "ndjson", "lookup", captured_order)
    assert result.exit_code == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert [json.loads(line)["clientSystemTransactionId"] for line in lines] == [
        "ORDER-1", "ORDER-1-CAP1"]


def test_lookup_csv(cli: Any, captured_order: str) -> None:
    result = cli("-o", "csv", "lookup", captured_order)
    assert result.exit_code == ExitCode.OK, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["clientSystemTransactionId"] for r in rows] == ["ORDER-1", "ORDER-1-CAP1"], rows
    assert rows[1]["transactionAmount"] == "2.00", rows
    assert rows[1]["clientSystemInvoiceId"] == "ORDER-1", rows
    assert rows[0]["clientSystemInvoiceId"] == "", rows


def test_lookup_table(cli: Any, captured_order: str) -> None:
    result = cli("-o", "table", "lookup", captured_order)
    assert result.exit_code == ExitCode.OK, result.stderr
    out = result.stdout
    assert "Transactions for ORDER-1" in out, out
    assert "12.34 EUR" in out, out
    assert "preAuthorisation" in out, out
    assert "ORDER-1-CAP1" in out, out
    assert "capturable 10.34 EUR, refundable 2.00 EUR" in out, out
    assert "\x1b[" not in out, "NO_COLOR is set: no escape codes"


def test_output_defaults(cli: Any, captured_order: str) -> None:
    piped = cli("lookup", captured_order)
    assert isinstance(json.loads(piped.stdout), list), "piped output must default to JSON"
    ENV.stdout_isatty = True
    tty = cli("lookup", captured_order)
    assert "Transactions for ORDER-1" in tty.stdout, "a terminal must default to the table"


def test_lookup_unknown_reference(cli: Any) -> None:
    result = cli("lookup", "NOPE")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    assert "HTTP 404" in result.stderr, result.stderr


# ---------------------------------------------------------------------------------- global


def test_version(cli: Any) -> None:
    result = cli("--version", config=False)
    assert result.exit_code == ExitCode.OK, result.stderr
    assert result.stdout.splitlines()[0] == f"walletctl {__version__}"
    assert "Python " in result.stdout  # the rest: tests/project/test_help_examples.py


@pytest.mark.parametrize("value", ["yaml", "TABLE", ""])
def test_bad_output(cli: Any, value: str) -> None:
    result = cli("--output", value, "lookup", "X")
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert "--output" in result.stderr, result.stderr


def test_help_lists_every_command(cli: Any) -> None:
    result = cli("--help", config=False)
    assert result.exit_code == ExitCode.OK, result.stderr
    for name in ("checkout", "capture", "refund", "reverse", "lookup"):
        assert name in result.stdout, result.stdout


def test_verbose_traces_on_stderr_only(cli: Any, captured_order: str) -> None:
    result = cli("-v", "-o", "json", "lookup", captured_order)
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "> GET http://testserver/api/v5/apmTransactions?" in result.stderr, result.stderr
    assert "< HTTP 200" in result.stderr, result.stderr
    assert isinstance(json.loads(result.stdout), list), "stdout must stay one JSON document"


def test_profile_env_var_selects_the_profile(
    cli: Any, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WALLETCTL_PROFILE", "missing")
    result = cli("lookup", "X")
    assert result.exit_code == ExitCode.CONFIG, result.stderr
    assert "missing" in result.stderr, result.stderr


@pytest.mark.parametrize("amount", ["0", "-5", "0.00"])
def test_followup_non_positive_amount_is_a_validation_error(
    cli: Any, sandbox: Any, make_order: Any, amount: str
) -> None:
    make_order("AUTH-1")
    before = ledger_refs(sandbox)
    result = cli("capture", "AUTH-1", "--amount", amount)
    assert result.exit_code == ExitCode.VALIDATION, result.stderr
    assert "--amount" in result.stderr, result.stderr
    assert "greater than zero" in result.stderr, result.stderr
    assert ledger_refs(sandbox) == before


@pytest.mark.parametrize(("currency", "given", "shown"),
                         [("EUR", "1", "1.00"), ("JPY", "500", "500"), ("BHD", "2.5", "2.500")])
def test_checkout_output_amount_has_the_currency_decimals(
    cli: Any, currency: str, given: str, shown: str
) -> None:
    for fmt in ("json", "csv"):
        result = cli("-o", fmt, "checkout", "--amount", given, "--currency", currency, "--ref",
                     f"R-{currency}-{fmt}")
        assert result.exit_code == ExitCode.OK, result.stderr
        if fmt == "json":
            assert json.loads(result.stdout)["amount"] == shown, result.stdout
        else:
            row = next(csv.DictReader(io.StringIO(result.stdout)))
            assert row["amount"] == shown, result.stdout


def test_end_of_input_at_the_prompt_is_a_no(cli: Any, sandbox: Any, make_order: Any) -> None:
    make_order("SALE-1", "5.00", "sale")
    ENV.stdin_isatty = True
    before = ledger_refs(sandbox)
    result = cli("refund", "SALE-1", input="")
    assert result.exit_code == ExitCode.USAGE, (result.exit_code, result.stderr)
    assert "cancelled" in result.stderr, result.stderr
    assert ledger_refs(sandbox) == before


def test_state_colour_and_no_color(
    cli: Any, make_order: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    make_order("SALE-1", "5.00", "sale")
    colour = re.compile(r"\x1b\[(3[0-7]|38;|9[0-7])")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR")
    coloured = cli("-o", "table", "lookup", "SALE-1")
    assert "\x1b[32mApproved" in coloured.stdout, repr(coloured.stdout)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = cli("-o", "table", "lookup", "SALE-1")
    assert "Approved" in plain.stdout, plain.stdout
    assert not colour.search(plain.stdout), f"NO_COLOR ignored: {plain.stdout!r}"


def test_decimal_amount_format_end_to_end(make_cli: Any, make_sandbox: Any) -> None:
    sandbox = make_sandbox("decimal")
    cli = make_cli("http://testserver", amount_format="decimal")
    assert cli("checkout", "--amount", "1.234", "--currency", "BHD", "--ref", "B-1",
               "--type", "preauth").exit_code == ExitCode.OK
    sandbox.approve("B-1")
    cap = cli("-o", "json", "capture", "B-1", "--amount", "0.5")
    assert cap.exit_code == ExitCode.OK, cap.stderr
    assert json.loads(cap.stdout)["amount"] == "0.500", cap.stdout
    rows = lookup_json(cli, "B-1")
    assert [r["transactionAmount"] for r in rows] == ["1.234", "0.500"], rows
    minor = make_cli("http://testserver", amount_format="minor")
    wrong = minor("lookup", "B-1")
    assert wrong.exit_code == ExitCode.GATEWAY, wrong.stderr
    assert "transactionAmount" in wrong.stderr, wrong.stderr
    assert "amount_format" in wrong.stderr, wrong.stderr


@pytest.mark.parametrize("command", [["checkout", "--amount", "1", "--ref", "N-1"],
                                     ["capture", "ORDER-1"]])
def test_dry_run_ndjson_is_one_line(cli: Any, make_order: Any, command: list[str]) -> None:
    make_order("ORDER-1")
    result = cli("-o", "ndjson", *command, "--dry-run")
    assert result.exit_code == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, f"NDJSON must be one line per request:\n{result.stdout}"
    doc = json.loads(lines[0])
    assert doc["dryRun"] is True, doc
    assert doc["request"]["method"] == "POST", doc


def test_checkout_from_stdin(cli: Any, sandbox: Any) -> None:
    body = dry_body(cli("-o", "json", "checkout", "--from-file", "-", "--dry-run",
                        input='{"Amount": "3.00", "ClientSystemTransactionId": "STDIN-1"}'))
    assert body["amount"] == "300", body
    assert body["clientSystemTransactionId"] == "STDIN-1", body
    assert "Amount" not in body, f"sample key case must be folded to the table spelling: {body}"


def test_errored_original_with_null_payer_fields(cli: Any, sandbox: Any, make_order: Any) -> None:
    make_order("ERR-1", "10.04")  # sandbox magic: errors at the provider on approval
    rows = lookup_json(cli, "ERR-1")
    assert [r["state"] for r in rows] == ["Errored"], rows
    payer = rows[0]["apmDetails"] or {}
    assert payer.get("apmPayerAccountNumber") is None, payer
    assert payer.get("apmProviderTransactionId") is None, payer
    before = ledger_refs(sandbox)
    result = cli("capture", "ERR-1")
    assert result.exit_code == ExitCode.DECLINED, result.stderr
    assert "Errored, not Approved" in result.stderr, result.stderr
    assert ledger_refs(sandbox) == before
