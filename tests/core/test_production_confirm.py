"""The contract of :func:`walletctl.cli.common.confirm_production`, the one check every
command acting on a production profile with more than a y/N calls (batches, smoke, and the
approval of a request): the outside view is in tests/money/test_production.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from walletctl.cli.common import confirm_production, confirm_profiles, refuse_production
from walletctl.cli.state import ENV
from walletctl.config.profile import Profile
from walletctl.constants import ExitCode
from walletctl.errors import UsageError

TEST = Profile(name="staging", base_url="https://staging.example", merchant_id="m",
               store_id="s", user_id="u")
LIVE = replace(TEST, name="live", base_url="https://gw.example", environment="production")


def never(question: str) -> str:
    raise AssertionError(f"asked {question!r}")


def test_a_test_profile_needs_nothing() -> None:
    ENV.stdin_isatty = False
    assert confirm_production(TEST, None, action="refund 3 row(s)") is False
    assert confirm_production(TEST, "staging", action="x", ask=never) is False


def test_production_without_a_terminal_needs_the_flag() -> None:
    ENV.stdin_isatty = False
    with pytest.raises(UsageError) as info:
        confirm_production(LIVE, None, action="approve request 7")
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.message == (
        "profile 'live' is a production profile: refusing to approve request 7 without "
        "--confirm-profile live (no terminal to type its name on); nothing was sent")
    assert info.value.hint == "pass --confirm-profile live (--yes does not replace it)"
    assert confirm_production(LIVE, "live", action="approve request 7", ask=never) is False


@pytest.mark.parametrize(("profile", "given"), [
    (LIVE, "Live"), (LIVE, "live "), (LIVE, "staging"), (LIVE, ""), (TEST, "live"),
    (TEST, "Staging")])
def test_a_given_name_must_be_exactly_the_profiles(profile: Profile, given: str) -> None:
    with pytest.raises(UsageError, match=r"--confirm-profile .* does not match"):
        confirm_production(profile, given, action="x", ask=never)


def test_on_a_terminal_the_name_is_typed() -> None:
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return " live\n"

    assert confirm_production(LIVE, None, action="refund 2 row(s) (3.00 EUR)", ask=ask) is True
    assert asked == ["PRODUCTION: type the profile's name (live) to refund 2 row(s) (3.00 EUR)"]
    with pytest.raises(UsageError, match="does not match the production profile 'live'"):
        confirm_production(LIVE, None, action="x", ask=lambda q: "staging")


def test_every_production_profile_of_a_batch_is_confirmed() -> None:
    other = replace(LIVE, name="live-us")
    ENV.stdin_isatty = False
    with pytest.raises(UsageError, match="without --confirm-profile live-us"):
        confirm_profiles([TEST, LIVE, other], ["live"], action="x")
    assert confirm_profiles([TEST, LIVE, other], ["live", "live-us"], action="x") is False
    with pytest.raises(UsageError, match="'nope' is not a profile of this batch"):
        confirm_profiles([TEST, LIVE], ["live", "nope"], action="x")
    assert confirm_profiles([LIVE], [], action="x", required=False) is False


def test_sandbox_commands_refuse_production() -> None:
    refuse_production(TEST, command="sandbox reset")
    with pytest.raises(UsageError) as info:
        refuse_production(LIVE, command="sandbox reset")
    assert info.value.message == ("sandbox reset: profile 'live' is a production profile; "
                                  "sandbox reset only acts on a sandbox: nothing was sent")


def test_a_decision_without_a_terminal_is_refused_as_a_decision_not_a_send(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``approve``/``approvals refuse`` without --yes and without a terminal: the one line
    says the decision is not recorded (nothing is sent by a decision)."""
    from walletctl.cli.common import confirm

    monkeypatch.setattr(ENV, "stdin_isatty", False)
    with pytest.raises(UsageError) as caught:
        confirm("Refuse #3", yes=False, action="refusal of #3", doing="record")
    assert caught.value.message.startswith(
        "refusing to record the refusal of #3 without confirmation"), caught.value.message
