"""One lock per order, whoever moves its money and however they spell the gateway; and a
movement a command did not make is never reported as its own.

Real ``walletctl`` processes against ``sandbox serve`` (through the tests' fault proxy),
where the process boundary is the point: four operators at once, two spellings of one
gateway (``127.0.0.1`` and ``localhost``), two runtime directories, one history file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from click.testing import CliRunner

from race_trials import TRIALS
from walletctl.cli.main import app
from walletctl.config.profile import Profile
from walletctl.ops.money.lock import gateway_origin, lock_key, lock_path

from .conftest import WALLETCTL, Desk, Result, unique

HELD = 11


@pytest.mark.parametrize(("one", "other"), [
    ("http://localhost:8765", "http://127.0.0.1:8765/"),
    ("http://LOCALHOST:8765/api", "http://127.0.0.2:8765"),
    ("http://[::1]:8765", "http://localhost:8765"),
    ("https://Gateway.Example", "https://gateway.example:443/"),
    ("http://gateway.example", "http://gateway.example:80"),
])
def test_spellings_of_one_gateway_are_one_origin(one: str, other: str) -> None:
    assert gateway_origin(one) == gateway_origin(other)


@pytest.mark.parametrize(("one", "other"), [
    ("http://localhost:8765", "http://localhost:8766"),
    ("http://gateway.example", "https://gateway.example"),
    ("http://gateway.example", "http://other.example"),
    ("http://127.0.0.1:8765", "http://10.0.0.1:8765"),
])
def test_two_gateways_are_two_origins(one: str, other: str) -> None:
    assert gateway_origin(one) != gateway_origin(other)


def test_the_lock_key_is_the_order_not_the_spelling() -> None:
    def profile(url: str, store: str = "S-01") -> Profile:
        return cast(Profile, SimpleNamespace(base_url=url, merchant_id="M-1", store_id=store))

    assert lock_key(profile("http://localhost:1/"), "O-1") == \
        lock_key(profile("http://127.0.0.1:1"), "O-1")
    assert lock_key(profile("http://localhost:1"), "O-1") != \
        lock_key(profile("http://localhost:1", "S-02"), "O-1")


def test_the_lock_file_is_beside_the_history_file_whatever_the_runtime_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.history import open_history

    with open_history(tmp_path / "h.sqlite3") as store:
        for runtime in ("/nonexistent", str(tmp_path)):
            monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
            assert lock_path(store) == tmp_path / "h.sqlite3.lock"


def _made(result: Result) -> str:
    """The refund a command reports as made (its JSON answer)."""
    answer = result.json()
    assert answer["state"] == "Approved", result
    return str(answer["clientSystemTransactionId"])


def _refunds(desk: Desk, ref: str) -> list[dict[str, Any]]:
    return [r for r in desk.followups(ref, "refund") if r.get("state") == "Approved"]


@pytest.mark.slow
def test_four_operators_two_spellings_two_runtime_dirs_each_exit_0_has_its_own_refund(
        desk: Desk, tmp_path: Path) -> None:
    """TRIALS (tests/race_trials.py) trials of four refunds of 99 on one order at once with
    --allow-duplicate: two through ``127.0.0.1`` and two through ``localhost``, each pair
    split over two ``XDG_RUNTIME_DIR``s. Every command that exits 0 names a refund of its
    own that the gateway holds; none is reported twice."""
    runtimes = []
    for name in ("run-a", "run-b"):
        runtime = tmp_path / name
        runtime.mkdir(mode=0o700)
        runtimes.append(str(runtime))
    lineup = [("desk-a", runtimes[0]), ("desk-a", runtimes[1]),
              ("desk-b", runtimes[0]), ("desk-b", runtimes[1])]
    claimed_total = exits_0 = 0
    for _ in range(TRIALS):
        ref = desk.sale(unique("LOCK"), "500.00")
        argv = ("refund", ref, "--amount", "99", "--allow-duplicate", "--yes")
        procs = [subprocess.Popen([*WALLETCTL, "-p", profile, *argv], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                  env={**desk.env, "XDG_RUNTIME_DIR": runtime})
                 for profile, runtime in lineup]
        results = [Desk.finish(proc, argv, timeout=180) for proc in procs]
        claimed: list[str] = []
        for result in results:
            assert "Traceback" not in result.stderr, result
            assert result.code in (0, HELD), result
            if result.code == 0:
                claimed.append(_made(result))
        at_gateway = {r["clientSystemTransactionId"] for r in _refunds(desk, ref)}
        assert len(claimed) == len(set(claimed)), (claimed, results)
        assert set(claimed) <= at_gateway, (claimed, at_gateway)
        claimed_total += len(claimed)
        exits_0 += sum(r.code == 0 for r in results)
    # one lock for all four: each waits its turn and makes a refund of its own
    assert exits_0 == claimed_total == 4 * TRIALS


def _hide_refunds(desk: Desk) -> None:
    """Lookups through the proxy show the order without its refunds: the next command
    derives a reference another command already used."""
    def hide(records: Any) -> Any:
        return [r for r in records if r.get("type") != "ecom.refund"]

    desk.proxy.rewrite_lookup(hide)


def test_a_replayed_answer_is_not_claimed(desk: Desk, tmp_path: Path) -> None:
    """Off the desk (another history file), REF1 was refunded. A command that derives REF1
    again gets the gateway's stored answer to that identical request: it exits 11, claims
    nothing, and records the entry as not its movement."""
    ref = desk.sale(unique("REPLAY"), "300.00")
    other = {"WALLETCTL_AUDIT_LOG": str(tmp_path / "elsewhere.sqlite3")}
    first = desk.run("-p", "desk-a", "refund", ref, "--amount", "99", "--yes", env=other,
                     expect=0)
    made = _made(first)
    _hide_refunds(desk)
    again = desk.run("-p", "desk-b", "refund", ref, "--amount", "99", "--yes",
                     "--allow-duplicate", expect=HELD)
    assert "Refunded" not in again.stdout, again
    assert f"the gateway answered {made} with the stored answer" in again.stderr, again
    assert "nothing was moved by it" in again.stderr, again
    assert [r["clientSystemTransactionId"] for r in _refunds(desk, ref)] == [made]
    [entry] = [e for e in desk.history() if e["original_ref"] == ref]
    assert (entry["new_ref"], entry["outcome"], entry["exit_code"]) == (made, "declined", HELD)


def test_a_reference_another_command_began_is_not_reused(desk: Desk) -> None:
    """On one history, a command that derives a reference another entry already began
    sends nothing (exit 11) and says to run it again."""
    ref = desk.sale(unique("TAKEN"), "300.00")
    desk.run("-p", "desk-a", "refund", ref, "--amount", "99", "--yes", expect=0)
    posts = len(desk.proxy.posts())
    _hide_refunds(desk)
    again = desk.run("-p", "desk-b", "refund", ref, "--amount", "99", "--yes",
                     "--allow-duplicate", expect=HELD)
    assert "derived by another command at the same moment" in again.stderr, again
    assert "nothing was sent" in again.stderr, again
    assert len(desk.proxy.posts()) == posts
    assert len(_refunds(desk, ref)) == 1


@pytest.mark.parametrize("runtime", ["unwritable", "missing", "relative"])
def test_an_unusable_runtime_dir_does_not_stop_a_refund(desk: Desk, tmp_path: Path,
                                                        runtime: str) -> None:
    """``XDG_RUNTIME_DIR`` after ``su``: a folder this user cannot write, one that is gone,
    a relative path. The lock is beside the history file, so the refund goes through."""
    folder = tmp_path / "not-mine"
    folder.mkdir(mode=0o500)
    value = {"unwritable": str(folder), "missing": str(tmp_path / "gone"),
             "relative": "run"}[runtime]
    ref = desk.sale(unique("XDG"), "50.00")
    result = CliRunner().invoke(app, ["-p", "desk-a", "refund", ref, "--amount", "5", "--yes"],
                                env={**desk.env, "XDG_RUNTIME_DIR": value},
                                catch_exceptions=False)
    shown = Result(("refund",), result.exit_code, result.stdout, result.stderr)
    assert result.exit_code == 0, shown
    assert len(_refunds(desk, ref)) == 1
    assert (Path(desk.env["WALLETCTL_AUDIT_LOG"] + ".lock")).exists()
