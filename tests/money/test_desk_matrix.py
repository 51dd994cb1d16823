"""Every rule of the desk on every movement, from outside: real ``walletctl`` processes, the
sandbox served on a real port, profiles made and changed only with ``walletctl profile``
commands, and the gateway's own records read over raw HTTP. Each rule is set in the
profile, or in the desk's policy kept in the history (``history policy set``): a local file,
and a PostgreSQL database whose owner sets it while alice, an operator, moves the money.

Operations: checkout, capture, refund, reverse, authorize (browser wallet, a PAN_ONLY account
after ``walletctl sandbox 3ds``) and a refund batch's row. Rules: ``require_reason``, a limit
(``history.limits``), an approval amount (``history.approvals``) and the likely-duplicate
hold. Where a rule refuses, nothing reaches the gateway; where it is met, the movement is
made once.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from first_hour_fixtures import Served, embedded_serving, walletctl_env

from .conftest import Desk, Result, unique

Move = Callable[..., Result]
OPERATIONS = ["checkout", "capture", "refund", "reverse", "authorize", "batch"]
SERVICE = "Basic " + base64.b64encode(b"ops-bot:sandbox-secret").decode()


class Matrix:
    """One movement of each kind on ``desk-a``, and what the gateway holds afterwards. The
    rules come from the profile, or (``rulebook``) from the desk's policy kept in the
    history (the local file here; tests/pg/test_rulebook.py has the team's database)."""

    def __init__(self, desk: Desk, tmp: Path, source: str = "profile") -> None:
        self.desk, self.tmp, self.source = desk, tmp, source
        self.owner: dict[str, str] = {}  # the history owner's environment (rulebook-pg)
        self._keys: dict[str, str] | None = None

    def setting(self, key: str, value: str) -> None:
        if self.source.startswith("rulebook"):
            rule = key.removeprefix("history.")
            self.desk.run("history", "policy", "set", rule, value, env=self.owner, expect=0)
            shown = self.desk.run("-o", "json", "history", "policy", "show", expect=0).json()
            assert {r["key"]: r["value"] for r in shown["rules"]}[rule] == value, shown
            return
        self.desk.run("profile", "set", "desk-a", key, value, expect=0)
        shown = self.desk.run("-o", "json", "profile", "show", "desk-a", expect=0).json()
        table, _, leaf = key.removeprefix("history.").rpartition(".")
        found = shown["history"][table] if table else shown["history"]
        assert value in str(found[leaf]), shown["history"]  # the rule is shown where set

    # -- the movement's subject, made straight at the gateway --------------------------------
    def subject(self, op: str, amount: str = "40.00") -> str:
        """What ``op`` moves money on; a reversal releases the whole ``amount``."""
        d = self.desk
        if op == "reverse":
            return d.preauth(unique("REV"), amount)
        if op == "capture":
            return d.preauth(unique("CAP"), "40.00")
        if op in ("refund", "batch"):
            return d.sale(unique("SAL"), "40.00")
        if op == "checkout":
            return unique("CHK")
        return self._three_ds(unique("AUT"))

    def _three_ds(self, ref: str) -> str:
        """A PAN_ONLY payment account for ``ref`` and its 3DS result in a file (named by
        the reference), as a merchant's page and ``walletctl sandbox 3ds`` make them."""
        url = self.desk.sandbox_url
        if self._keys is None:
            resp = httpx.post(f"{url}/api/v5/publicKeys", headers={"Authorization": SERVICE},
                              json={"merchantId": self.desk.merchant_id,
                                    "storeId": self.desk.store_id}, timeout=10)
            assert resp.status_code == 200, resp.text
            self._keys = resp.json()
        keys = self._keys
        token = httpx.post(f"{url}/_sandbox/wallet/token", timeout=10, json={
            "cardId": "visa-pan", "gatewayMerchantId": self.desk.merchant_id,
            "publicKeyApi": keys["apiKey"]})
        assert token.status_code == 200, token.text
        account = httpx.post(f"{url}/api/v5/paymentAccounts", timeout=10, headers={
            "Authorization": f"PublicApiKey {keys['apiKey']}"}, json={
            "merchantId": self.desk.merchant_id, "storeId": self.desk.store_id,
            "clientSystemTransactionId": ref, "paymentData": {
                "apiVersion": 2, "apiVersionMinor": 0,
                "paymentMethodData": token.json()["paymentMethodData"]}})
        assert account.status_code == 200, account.text
        three = self.desk.run("-p", "desk-a", "-o", "json", "sandbox", "3ds",
                              account.json()["transactionAccountId"], expect=0)
        (self.tmp / f"{ref}.3ds.json").write_text(three.stdout)
        return ref

    # -- the movement, as an operator types it ------------------------------------------------
    def move(self, op: str, ref: str, amount: str, *extra: str,
             expect: int | tuple[int, ...]) -> Result:
        d = self.desk
        base = ("-p", "desk-a", "-o", "json")
        if op == "checkout":
            return d.run(*base, "checkout", "--ref", ref, "--amount", amount, *extra,
                         expect=expect)
        if op == "authorize":
            assert self._keys is not None
            return d.run(*base, "authorize", "--3ds", str(self.tmp / f"{ref}.3ds.json"),
                         "--ref", ref, "--amount", amount, "--yes",
                         "--encryption-key-id", self._keys["encryptionKeyId"], *extra,
                         expect=expect)
        if op == "batch":
            rows = self.tmp / f"{unique('rows')}.csv"
            rows.write_text(f"ref,amount,currency\n{ref},{amount},EUR\n")
            return d.run(*base, "refund", "--batch", str(rows), "--yes", *extra,
                         expect=expect)
        return d.run(*base, op, ref, "--amount", amount, "--yes", *extra, expect=expect)

    def moved(self, op: str, ref: str) -> int:
        """How many movements of ``op`` the gateway holds on ``ref``."""
        d = self.desk
        if op in ("checkout", "authorize"):
            return sum(1 for r in d.records(ref) if r["clientSystemTransactionId"] == ref)
        return len(d.followups(ref, "refund" if op == "batch" else op))


@pytest.fixture(scope="module")
def one_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One served sandbox for the whole matrix: every case works on references of its own."""
    with embedded_serving(tmp_path_factory.mktemp("sandbox")) as served:
        yield served


@pytest.fixture
def served_sandbox(one_sandbox: Served, tmp_path: Path) -> Served:
    """The matrix's sandbox, with a profiles file of the case's own: a copy of the one
    ``--write-profile`` wrote, to which ``desk`` adds its profiles."""
    config = tmp_path / "cfg" / "profiles.toml"
    config.parent.mkdir(mode=0o700)
    shutil.copy2(one_sandbox.config, config)
    return Served(one_sandbox.url, config, walletctl_env(config))


@pytest.fixture
def plain(desk: Desk, tmp_path: Path) -> Matrix:
    """The matrix for what no rule source changes (the duplicate hold, one reference)."""
    return Matrix(desk, tmp_path)


@pytest.fixture(params=["profile", "rulebook", "rulebook-pg"])
def matrix(desk: Desk, tmp_path: Path, request: pytest.FixtureRequest) -> Matrix:
    """``rulebook-pg``: the desk's history is a PostgreSQL database; its owner sets the
    rules, and the movements are alice's (an operator, through her ~/.pgpass)."""
    found = Matrix(desk, tmp_path, request.param)
    if request.param == "rulebook-pg":
        pg = request.getfixturevalue("pg_desk")

        def role(name: str) -> dict[str, str]:
            return {**pg.cluster.env_for(name, tmp_path / name),
                    "WALLETCTL_HISTORY_URL": pg.url(name), "WALLETCTL_AUDIT_LOG": ""}

        found.owner = role("desk_owner")
        desk.run("history", "setup", "--grant", "alice", env=found.owner, expect=0)
        desk.env.update(role("alice"))
    return found


def _history_op(op: str) -> str:
    return "refund" if op == "batch" else op


@pytest.mark.parametrize("op", OPERATIONS)
def test_require_reason(matrix: Matrix, op: str) -> None:
    matrix.setting("history.require_reason", _history_op(op))
    ref = matrix.subject(op, "5.00")
    refused = matrix.move(op, ref, "5.00", expect=5)
    assert "a reason is required" in refused.stderr, refused
    assert "nothing was sent" in refused.stderr, refused
    assert matrix.moved(op, ref) == 0
    matrix.move(op, ref, "5.00", "--reason", "customer asked", expect=0)
    assert matrix.moved(op, ref) == 1
    reasons = [e.get("reason") for e in matrix.desk.history()
               if e["operation"] == _history_op(op) and ref in (e.get("reference"),
                                                               e.get("original_ref"))]
    assert "customer asked" in reasons, reasons


@pytest.mark.parametrize("op", OPERATIONS)
def test_limit(matrix: Matrix, op: str) -> None:
    matrix.setting(f"history.limits.{_history_op(op)}", "10.00")
    ref = matrix.subject(op, "20.00")
    no_reason = matrix.move(op, ref, "20.00", expect=5)
    assert "limit of 10.00" in no_reason.stderr, no_reason
    unconfirmed = matrix.move(op, ref, "20.00", "--reason", "big one", expect=5)
    assert "--confirm-amount" in unconfirmed.stderr, unconfirmed
    wrong = matrix.move(op, ref, "20.00", "--reason", "big one", "--confirm-amount", "2.00",
                        expect=5)
    assert "nothing was sent" in wrong.stderr, wrong
    assert matrix.moved(op, ref) == 0
    matrix.move(op, ref, "20.00", "--reason", "big one", "--confirm-amount", "20.00",
                expect=0)
    assert matrix.moved(op, ref) == 1


@pytest.mark.parametrize("op", ["capture", "refund", "reverse", "batch"])
def test_approval_amount(matrix: Matrix, op: str) -> None:
    matrix.setting(f"history.approvals.{_history_op(op)}", "10.00")
    ref = matrix.subject(op, "20.00")
    filed = matrix.move(op, ref, "20.00", expect=12)
    assert "approval" in filed.stderr, filed
    assert matrix.moved(op, ref) == 0
    small = matrix.subject(op, "5.00")
    matrix.move(op, small, "5.00", expect=0)  # below the amount: no second person needed
    assert matrix.moved(op, small) == 1


@pytest.mark.parametrize("op", ["checkout", "authorize"])
def test_approval_amount_names_only_follow_ups(plain: Matrix, op: str) -> None:
    """Four eyes guards money leaving an order (capture, refund, reversal); the setting for
    a checkout or an authorization does not exist, and saying it is a usage error."""
    refused = plain.desk.run("profile", "set", "desk-a", f"history.approvals.{op}", "10.00",
                              expect=2)
    assert "not a profile setting" in refused.stderr, refused


@pytest.mark.parametrize("op", ["capture", "refund", "batch"])
def test_duplicate_hold(plain: Matrix, op: str) -> None:
    """(A reversal releases the whole pre-authorisation: a second one is refused by the
    ledger's own rule before the hold is asked.)"""
    ref = plain.subject(op)
    plain.move(op, ref, "5.00", expect=0)
    held = plain.move(op, ref, "5.00", expect=11)
    assert "duplicate" in (held.stderr + held.stdout).lower(), held
    assert plain.moved(op, ref) == 1
    plain.move(op, ref, "5.00", "--allow-duplicate", expect=0)
    assert plain.moved(op, ref) == 2


@pytest.mark.parametrize("op", ["checkout", "authorize"])
def test_same_reference_moves_once(plain: Matrix, op: str) -> None:
    """A checkout's or an authorization's reference is its identity: the same command again
    moves nothing new. A checkout is replayed (exit 0, "replayed"); an authorization's 3DS
    result is spent with it, so the gateway refuses the second one (exit 5)."""
    ref = plain.subject(op)
    plain.move(op, ref, "5.00", expect=0)
    again = plain.move(op, ref, "5.00", expect=0 if op == "checkout" else 5)
    if op == "checkout":
        assert json.loads(again.stdout).get("replayed") is True, again
    assert plain.moved(op, ref) == 1
