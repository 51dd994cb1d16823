"""The desk's rulebook in a local history file: kept in the file, changed with its entry in
the chain, and checked by the store for any client of it (a file's owner can still edit
the file itself: docs/history.md says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from walletctl.errors import UsageError
from walletctl.history.policy import PolicyRefusal
from walletctl.history.rulebook import change, read, under_rulebook
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Intent

STEP = Intent(time="2026-11-25T10:00:00.000Z", os_user="me", host="h", profile="p",
              base_url="u", operation="policy", outcome="approved", exit_code=0)


def _refund(amount: str, **extra: object) -> Intent:
    return Intent(time="2026-11-25T10:00:01.000Z", os_user="me", host="h", profile="p",
                  base_url="u", operation="refund", original_ref="O-1", new_ref="O-1-R1",
                  amount=amount, currency="EUR", merchant_id="M", store_id="S",
                  **extra)  # type: ignore[arg-type]


def test_the_store_refuses_what_the_rulebook_forbids(tmp_path: Path) -> None:
    with SqliteHistory(tmp_path / "h.sqlite3") as store:
        assert change(store, "approvals.refund.EUR", "100", step=STEP) == (None, "100")
        assert change(store, "require_reason", "refund,capture", step=STEP)[1] == \
            "refund,capture"
        with pytest.raises(PolicyRefusal, match="needs a reason"):
            store.begin(_refund("5.00"))
        with pytest.raises(PolicyRefusal, match="approval amount of 100 and names no"):
            store.begin(_refund("450.00", reason="parcel lost"))
        with pytest.raises(PolicyRefusal, match="names no approval"):
            store.begin(_refund("450.00", reason="x", approval=7))
        entry = store.begin(_refund("100.00", reason="at the amount"))
        assert [e.operation for e in store.entries()] == ["policy", "policy", "refund"]
        assert store.verify()[1] is None
        assert entry == 3
        with pytest.raises(UsageError, match=r"limits\.refund: must be an amount"):
            change(store, "limits.refund", "-1", step=STEP)
        with pytest.raises(UsageError, match=r"policy key 'approvals\.checkout'"):
            change(store, "approvals.checkout", "1", step=STEP)
        assert change(store, "require_reason", None, step=STEP) == ("refund,capture", None)
        assert set(read(store)) == {"approvals.refund.EUR"}


def test_a_profile_only_tightens(tmp_path: Path) -> None:
    from walletctl.config.profile import HistorySettings, Profile

    profile = Profile(name="p", base_url="http://x", merchant_id="M", store_id="S",
                      user_id="u", history=HistorySettings(approvals={"refund": "50"},
                                                           limits={"refund": "500"}))
    with SqliteHistory(tmp_path / "h.sqlite3") as store:
        change(store, "approvals.refund", "100", step=STEP)
        change(store, "limits.refund.EUR", "1000", step=STEP)
        change(store, "approval_hours", "4", step=STEP)
        merged = under_rulebook(read(store), profile).history
        assert merged.approvals == {"refund": "50"}  # the profile's is stricter
        assert merged.limits == {"refund": "500", "refund.EUR": "500"}
        assert merged.approval_hours == 4
        change(store, "approvals.refund", "20", step=STEP)
        with pytest.raises(PolicyRefusal, match=r"approvals.refund = 50 would loosen"):
            under_rulebook(read(store), profile)


def test_the_duplicate_window_and_approval_hours_only_tighten(tmp_path: Path) -> None:
    from walletctl.config.profile import HistorySettings, Profile

    def profile(**settings: int) -> Profile:
        return Profile(name="p", base_url="http://x", merchant_id="M", store_id="S",
                       user_id="u", history=HistorySettings(**settings))  # type: ignore[arg-type]

    with SqliteHistory(tmp_path / "h.sqlite3") as store:
        change(store, "duplicate_window", "5", step=STEP)
        change(store, "approval_hours", "48", step=STEP)
        merged = under_rulebook(read(store), profile()).history
        assert (merged.duplicate_window, merged.approval_hours) == (5, 24)  # the defaults
        merged = under_rulebook(read(store), profile(duplicate_window=30,
                                                     approval_hours=12)).history
        assert (merged.duplicate_window, merged.approval_hours) == (30, 12)
        with pytest.raises(PolicyRefusal, match=r"duplicate_window = 3 would loosen"):
            under_rulebook(read(store), profile(duplicate_window=3))
        with pytest.raises(PolicyRefusal, match=r"approval_hours = 72 would loosen"):
            under_rulebook(read(store), profile(approval_hours=72))


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_policy_commands_from_outside_fit_the_terminal(tmp_path: Path, columns: int) -> None:
    """``history policy set/show/unset`` as a user types them, on a file of their own."""
    import os

    from cli_runner import run_walletctl

    env = {**os.environ, "WALLETCTL_AUDIT_LOG": str(tmp_path / "h.sqlite3"),
           "WALLETCTL_CONFIG": str(tmp_path / "none.toml"), "COLUMNS": str(columns)}

    def run(*argv: str, code: int = 0) -> str:
        done = run_walletctl(["-o", "table", *argv], env=env)  # in-process
        assert done.returncode == code, done
        assert "Traceback" not in done.stderr, done
        return done.stdout

    run("history", "policy", "set", "approvals.refund.EUR", "250.00")
    run("history", "policy", "set", "duplicate_window", "15")
    shown = run("history", "policy", "show")
    assert "approvals.refund.EUR" in shown, shown
    assert "250.00" in shown, shown
    # piped, a text line is not wrapped (only a terminal's are, tests/core/test_terminal_width):
    # the title naming the file's path is one such line; the table fits COLUMNS
    table = [line for line in shown.splitlines() if str(tmp_path) not in line]
    assert max(map(len, table)) <= columns, shown
    listed = run("history")
    if columns >= 60:  # (at 40 the listing's reference column is a few letters wide)
        assert "duplicate_window:" in listed, listed  # the change itself, in its cell
        assert "-> 15" in listed, listed
    assert max(map(len, listed.splitlines())) <= columns, listed
    run("history", "policy", "unset", "nope", code=2)
    assert "no desk policy" not in run("history", "policy", "unset", "duplicate_window")


@pytest.mark.parametrize(("key", "value", "ok"), [
    ("approvals.refund.JPY", "5.5", False), ("approvals.refund.JPY", "500", True),
    ("limits.capture.EUR", "5.001", False), ("limits.capture.EUR", "5.10", True),
    ("approvals.refund.KWD", "5.125", True), ("approvals.refund", "5.001", True)])
def test_a_currency_amount_has_that_currency_s_decimals(tmp_path: Path, key: str,
                                                         value: str, ok: bool) -> None:
    """``history policy set`` refuses an amount the currency cannot hold (one line naming
    the key and the rule, exit 2, nothing stored); a key without a currency takes any."""
    import os

    from cli_runner import run_walletctl

    env = {**os.environ, "WALLETCTL_AUDIT_LOG": str(tmp_path / "h.sqlite3"),
           "WALLETCTL_CONFIG": str(tmp_path / "none.toml")}
    done = run_walletctl(["history", "policy", "set", key, value], env=env)  # in-process
    assert done.returncode == (0 if ok else 2), done
    if not ok:
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"walletctl: error: {key}: "), line
        assert "decimal place" in line, line
