"""walletctl's pytest plugin, driven the way a merchant's test suite uses it (pytester).

Each test writes a small test project and runs pytest on it in a subprocess, so the plugin is
loaded through its entry point exactly as in a user's project.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def doc_blocks() -> dict[str, str]:
    """The python code blocks of docs/testing.md, by the path in their first-line comment."""
    blocks: dict[str, str] = {}
    for body in re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S):
        first = body.splitlines()[0]
        if first.startswith("# ") and first.endswith(".py"):
            blocks[first[2:].strip()] = body
    return blocks


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", *args, timeout=240)


@pytest.mark.slow
def test_the_documented_example_passes(pytester: pytest.Pytester) -> None:
    blocks = doc_blocks()
    assert set(blocks) == {"shop/payments.py", "tests/test_payments.py", "conftest.py"}, \
        blocks.keys()
    for rel, code in blocks.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
    # as printed: nothing else (no __init__.py, no pythonpath), plain pytest in the directory
    result = run_pytest(pytester)
    result.assert_outcomes(passed=8)


FIXTURE_TOUR = '''
from decimal import Decimal

import httpx


def checkout(sb, ref, amount="10.00", kind="ecom.preauthorization"):
    minor = str(int(Decimal(amount) * 100))
    body = {"merchantId": sb.merchant_id, "storeId": sb.store_id, "userId": sb.user_id,
            "type": kind, "amount": minor, "currencyCode": "EUR",
            "clientSystemTransactionId": ref,
            "checkoutDetails": {"paymentMethod": "WalletV2", "cardholderFirstName": "A",
                                "cardholderLastName": "B", "cardholderEmail": "a@b.example",
                                "redirectUrlTimeout": 900},
            "addressDetails": {"billingAddress": {"houseNumber": "1", "street": "S",
                               "city": "C", "zipPostalCode": "1", "countryCode": "DEU"}},
            "redirectDetails": {f"{k}Url": f"https://shop.example/{k}" for k in
                                ("return", "success", "pending", "error", "cancel",
                                 "refused")}}
    return httpx.post(sb.base_url + "/api/v5/checkout", json=body, headers=sb.auth_headers)


def test_a_creates_state(wallet_sandbox):
    assert checkout(wallet_sandbox, "ISO-1").status_code == 200
    assert wallet_sandbox.approve("ISO-1")["state"] == "Approved"
    assert len(wallet_sandbox.ledger()) == 1


def test_b_sees_none_of_it(wallet_sandbox):
    assert wallet_sandbox.ledger() == []


def test_c_decline_and_cancel(wallet_sandbox):
    checkout(wallet_sandbox, "D-1", str(wallet_sandbox.DECLINED))
    assert wallet_sandbox.approve("D-1")["state"] == "Declined"
    checkout(wallet_sandbox, "D-2")
    assert wallet_sandbox.decline("D-2")["state"] == "Declined"
    checkout(wallet_sandbox, "D-3")
    assert wallet_sandbox.cancel("D-3")["state"] == "Cancelled"


def test_d_faults_are_restored(wallet_sandbox):
    before = wallet_sandbox.current_faults()
    with wallet_sandbox.faults(error_rate=1.0, status=503):
        assert checkout(wallet_sandbox, "F-1").status_code == 503
    assert wallet_sandbox.current_faults() == before
    assert checkout(wallet_sandbox, "F-1").status_code == 200


def test_e_clock(wallet_sandbox):
    resp = checkout(wallet_sandbox, "C-1")
    url = resp.json()["redirectUrl"]
    wallet_sandbox.advance_clock(902)
    assert httpx.get(url).headers["location"] == "https://shop.example/error"


def test_f_clock_is_rewound(wallet_sandbox):
    resp = checkout(wallet_sandbox, "C-2")
    assert httpx.get(resp.json()["redirectUrl"]).status_code == 200


def test_g_cli_with_the_profile(wallet_sandbox, wallet_profile):
    checkout(wallet_sandbox, "P-1")
    wallet_sandbox.approve("P-1")
    done = wallet_profile.run("-o", "json", "capture", "P-1", "--amount", "4")
    assert done.returncode == 0, done.stderr
    assert [t["reference"] for t in wallet_sandbox.ledger()] == ["P-1", "P-1-CAP1"]
    assert wallet_sandbox.api_key not in done.stdout + done.stderr
'''


@pytest.mark.slow
def test_every_fixture_and_isolation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tour=FIXTURE_TOUR)
    result = run_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(passed=7)


def test_explicit_p_option_and_opt_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one="def test_it(wallet_sandbox):\n    assert wallet_sandbox.ledger() == []\n")
    run_pytest(pytester, "-p", "walletctl.testing").assert_outcomes(passed=1)
    off = run_pytest(pytester, "-p", "no:walletctl.testing")
    off.assert_outcomes(errors=1)
    off.stdout.fnmatch_lines(["*fixture 'wallet_sandbox' not found*"])


@pytest.mark.slow
def test_external_sandbox_mode(pytester: pytest.Pytester, served_sandbox: str) -> None:
    pytester.makepyfile(test_tour=FIXTURE_TOUR)
    result = run_pytest(pytester, "--wallet-sandbox-url", served_sandbox,
                        "--wallet-sandbox-api-key", "ci-key")
    result.assert_outcomes(passed=7)


def test_external_sandbox_from_ini_and_env(pytester: pytest.Pytester, served_sandbox: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nwallet_sandbox_api_key = ci-key\n")
    monkeypatch.setenv("WALLETCTL_SANDBOX_URL", served_sandbox)
    pytester.makepyfile(test_one=(
        "def test_it(wallet_sandbox):\n"
        f"    assert wallet_sandbox.base_url == {served_sandbox!r}\n"
        "    assert wallet_sandbox.external\n"))
    run_pytest(pytester).assert_outcomes(passed=1)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "http://[::1", "http://127.0.0.1:abc"])
def test_unreachable_external_sandbox_is_a_usage_error(pytester: pytest.Pytester,
                                                       url: str) -> None:
    """One stop for the whole run (exit 4) naming the URL, not an error in every test."""
    pytester.makepyfile(test_one="def test_it(wallet_sandbox):\n    pass\n",
                        test_two="def test_a(wallet_sandbox):\n    pass\n\n\n"
                                 "def test_b(wallet_sandbox):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wallet-sandbox-url",
                                           url, "--wallet-sandbox-wait", "1", timeout=120)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert text.count(f"--wallet-sandbox-url {url}") == 1, text
    assert "Traceback" not in text, text
    assert "ERROR at setup" not in text, text
    assert len(text.splitlines()) < 30, text
