"""The suite's one time factor (tests/timescale.py) takes a positive number and nothing else."""

from __future__ import annotations

import pytest

from timescale import ENV, _factor, scaled


@pytest.mark.parametrize(("text", "factor"), [("1", 1.0), ("2.5", 2.5), ("0.5", 0.5)])
def test_a_positive_number_is_the_factor(text: str, factor: float) -> None:
    assert _factor(text) == factor


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "two", ""])
def test_anything_else_is_refused_with_the_variable_named(text: str) -> None:
    with pytest.raises(ValueError, match=ENV):
        _factor(text)


def test_scaled_multiplies_an_upper_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import timescale

    monkeypatch.setattr(timescale, "SCALE", 3.0)
    assert scaled(5) == 15.0
