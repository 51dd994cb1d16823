"""The desk's rules: a typed confirmation on a terminal, and the profile's [history] table."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from walletctl.errors import ConfigError
from walletctl.history.policy import PolicyRefusal, check_batch_policy, check_policy


def _check(typed: str | None, *, reason: str | None = "why") -> list[str]:
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return typed or ""

    check_policy(profile_name="desk", operation="refund", amount=Decimal("150.00"),
                 currency="EUR", require_reason=(), limits={"refund": "100"}, reason=reason,
                 confirm_amount=None, ask=ask)
    return asked


def _check_batch(typed: str, limits: dict[str, str] | None = None) -> list[str]:
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return typed

    check_batch_policy(profile_name="desk", operation="refund", reason_required=False,
                       above={"EUR": (2, Decimal("270.00"))},
                       limits=limits or {"desk": "100.00"}, reason="recall",
                       confirm_amount=None, ask=ask)
    return asked


def test_a_batch_total_typed_at_the_prompt_must_match() -> None:
    assert _check_batch("270") == ["2 rows of refund above profile desk's limit of 100.00 EUR "
                                   "total 270.00 EUR. Type the total to confirm"]
    for wrong in ("150.00", "", "٢٧٠"):
        with pytest.raises(PolicyRefusal, match=r"the confirmed total .* is not 270\.00 EUR"):
            _check_batch(wrong)
    two = _check_batch("270.00", {"desk": "100.00", "other": "50.00"})
    assert "above the limits of profiles desk (100.00 EUR), other (50.00 EUR)" in two[0]


def test_the_amount_typed_at_the_prompt_must_match() -> None:
    assert "Type the amount to confirm" in _check("150")[0]
    assert _check(" 150.00 ")
    for wrong in ("15", "", "150.01", "NaN", "1e400", "١٥٠", "1.5e2", "+1.5E2", "0x96"):
        with pytest.raises(PolicyRefusal, match=r"is not 150\.00 EUR"):
            _check(wrong)
    with pytest.raises(PolicyRefusal, match="a reason is required"):
        _check("150", reason=None)


@pytest.mark.parametrize(("table", "message"), [
    ('require_reason = ["refunds"]', "require_reason: must be true, false or a list"),
    ('limits = { refund = 100.5 }', 'limits -> refund: must be an amount in major units'),
    ('limits = { refund = "-1" }', 'limits -> refund: must be an amount'),
    ('limits = { lookup = "1" }', "limits -> lookup: not an operation"),
    ("enabled = 1", "enabled: must be true or false"),
    ("colour = true", "colour: unknown key"),
])
def test_bad_history_settings_name_the_key(tmp_path: Path, table: str, message: str) -> None:
    from walletctl.config.profiles_file import load_profile

    path = tmp_path / "profiles.toml"
    path.write_text('[profiles.p]\nbase_url = "https://gw.example"\nmerchant_id = "M"\n'
                    f'store_id = "S"\nuser_id = "u"\n[profiles.p.history]\n{table}\n')
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=r"profiles\.p -> history -> ") as info:
        load_profile("p", path)
    assert message in info.value.message
