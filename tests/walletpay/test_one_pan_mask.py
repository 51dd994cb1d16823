"""One PAN mask: the sandbox's answers, the CLI's output and the text scrubber all cut a card
number the same way (masking.py): 13-19 digits keep the first 6 and last 4 at most, a
shorter number only its last 4."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from walletctl.masking import mask_card_numbers, mask_pan
from walletctl.sandbox.walletpay import TEST_CARDS

if TYPE_CHECKING:
    from walletctl.sandbox.walletpay import TestCard
    from walletpay.conftest import Wallet


@pytest.mark.parametrize("card", TEST_CARDS, ids=lambda card: card.id)
def test_the_sandbox_masks_each_test_card_with_the_one_mask(wallet: Wallet,
                                                            card: TestCard) -> None:
    pan = card.pan
    resp = wallet.create_account(card.id)
    if resp.status_code != 200:  # a card the wallet refuses: no account, nothing shown
        assert pan not in resp.text
        return
    shown = resp.json()["maskedCardNumber"]
    assert shown == mask_pan(pan)
    assert shown == mask_card_numbers(pan)  # the scrubber of free text agrees
    assert pan not in resp.text


@pytest.mark.parametrize("length", range(4, 20))
def test_never_more_than_six_and_four_digits(length: int) -> None:
    pan = "4" + "1234567890123456789"[: length - 1]
    shown = mask_pan(pan)
    assert len(shown) == length
    assert shown.endswith(pan[-4:])
    visible = sum(c.isdigit() for c in shown)
    assert visible == (10 if length >= 13 else min(length, 4)), shown
    if length >= 13:  # a card number's length: the same cut as in free text
        assert shown == mask_card_numbers(pan)
