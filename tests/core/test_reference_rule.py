"""Issue 21: one merchant reference rule (``models.fields.check_reference``), and every
reference walletctl derives from an accepted one is accepted too.

The rule: 1-64 Unicode code points, none in Cc/Cf/Cs/Co, no separator but the plain space,
not starting or ending with a space. The property tests draw originals from the whole of
Unicode (astral letters, combining marks, '#', spaces inside) and check each derivation:
follow-up references (``REF-CAP1``, shortened with a hash), batch references, smoke
references from a ``--ref-prefix``.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from walletctl.models.fields import REFERENCE_RULE, check_reference
from walletctl.models.followup import FollowUpRequest
from walletctl.models.records import TransactionRecord

REFUSED_CATEGORIES: tuple[Literal["Cc", "Cf", "Cs", "Co", "Zs", "Zl", "Zp"], ...] = (
    "Cc", "Cf", "Cs", "Co", "Zs", "Zl", "Zp")
_inner = st.one_of(st.characters(exclude_categories=REFUSED_CATEGORIES), st.just(" "))
_edge = st.characters(exclude_categories=REFUSED_CATEGORIES)


@st.composite
def references(draw: Any, max_size: int = 64) -> str:
    """Any reference the rule accepts, 1..``max_size`` code points (long ones as often as
    short ones: a cut to make room for a suffix is where a space could end up last)."""
    size = draw(st.integers(1, max_size))
    if size == 1:
        return str(draw(_edge))
    middle = draw(st.lists(_inner, min_size=size - 2, max_size=size - 2).map("".join))
    return f"{draw(_edge)}{middle}{draw(_edge)}"


ACCEPTED = ["pre order 002606", "#1001", "Bestellung-ä-7", "A" * 64, "ä" * 64,
            "\U0001f600" * 64,  # 64 code points, 128 UTF-16 units, 256 bytes
            "e\u0301", "ORDER/1:2.3_4-5", "注文 12", "a b c", "x"]
REFUSED = {
    "": "is empty", "A" * 65: "is 65 characters long", "\U0001f600" * 65: "is 65",
    "a\tb": "U+0009", "a\nb": "U+000A", "a\x00b": "U+0000", "a\x7fb": "U+007F",
    "a\u200bb": "U+200B ZERO WIDTH SPACE", "a\ufeffb": "U+FEFF", "a\ud800b": "U+D800",
    "a\ue000b": "U+E000", "a\u00a0b": "U+00A0 NO-BREAK SPACE", "a\u2028b": "U+2028",
    "a\u2029b": "U+2029", " a": "starts with a space", "a ": "ends with a space",
    " ": "starts with a space", "a\u3000b": "U+3000",
}


@pytest.mark.parametrize("value", ACCEPTED)
def test_the_rule_accepts(value: str) -> None:
    assert check_reference(value) == value
    req = FollowUpRequest.from_wire({
        "merchantId": "M", "storeId": "S", "userId": "u", "type": "ecom.capture",
        "amount": "1.00", "currencyCode": "EUR", "clientSystemTransactionId": value,
        "clientSystemInvoiceId": value + "-CAP1" if len(value) < 60 else "x",
        "apmDetails": {"apmProvider": "WalletV2"}})
    assert req.client_system_transaction_id == value


@pytest.mark.parametrize(("value", "why"), list(REFUSED.items()))
def test_the_rule_refuses_naming_what_and_the_rule(value: str, why: str) -> None:
    with pytest.raises(ValueError, match="a reference must be") as err:
        check_reference(value)
    message = str(err.value)
    assert why in message, message
    assert REFERENCE_RULE in message, message
    assert message.isprintable(), message
    assert len(message) < 260, message


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=70))
def test_the_rule_is_exactly_the_stated_one(value: str) -> None:
    """An independent statement of the rule (per character, no fast path) agrees."""
    stated = (1 <= len(value) <= 64
              and all(c == " " or unicodedata.category(c) not in REFUSED_CATEGORIES
                      for c in value)
              and value[0] != " " and value[-1] != " ")
    try:
        check_reference(value)
        accepted = True
    except ValueError:
        accepted = False
    assert accepted is stated, repr(value)


@settings(max_examples=300, deadline=None)
@given(references(), st.sampled_from(["capture", "refund", "reverse"]),
       st.integers(1, 10**6))
def test_follow_up_references_of_any_accepted_original_are_accepted(
        original: str, op: Any, sequence: int) -> None:
    from walletctl.ops.redirect import derive_reference

    check_reference(original)
    derived = derive_reference(original, op, sequence)
    assert check_reference(derived) == derived
    assert derived != original
    assert derived == derive_reference(original, op, sequence)


@settings(max_examples=150, deadline=None)
@given(references(), st.sampled_from(["capture", "refund", "reverse"]),
       st.lists(references(), max_size=5))
def test_next_reference_skips_used_ones_within_the_rule(original: str, op: Any,
                                                         used: list[str]) -> None:
    from decimal import Decimal

    from walletctl.ops.redirect import derive_reference, next_reference

    taken = {derive_reference(original, op, n) for n in (1, 2)} | set(used)
    records = [TransactionRecord.from_wire({
        "clientSystemTransactionId": ref, "type": "ecom.sale",
        "state": "Approved", "transactionAmount": Decimal(1),
        "currencyCode": "EUR"}) for ref in sorted(taken)]
    derived = next_reference(original, op, records)
    assert check_reference(derived) == derived
    assert derived not in taken


@settings(max_examples=150, deadline=None)
@given(references(), st.sampled_from(["capture", "refund", "reverse"]),
       st.from_regex(r"[A-Za-z0-9_-]{4,64}", fullmatch=True), st.integers(0, 10**6))
def test_batch_references_of_any_accepted_original_are_accepted(
        original: str, op: Any, batch_id: str, occurrence: int) -> None:
    from walletctl.ops.batch.input_rows import check_ref
    from walletctl.ops.batch.journal import default_batch_id, derive_reference

    assert check_ref(original) == original  # the batch reader takes what the rule takes
    for bid in (batch_id, default_batch_id(op, None, original)):
        derived = derive_reference(bid, op, original, occurrence)
        assert check_reference(derived) == derived


@settings(max_examples=150, deadline=None)
@given(references(max_size=24), st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True))
def test_smoke_references_of_any_accepted_prefix_are_accepted(prefix: str, tag: str) -> None:
    from walletctl.masking import Masker
    from walletctl.ops.smoke import RunContext, _check_prefix, new_run_id
    from walletctl.ops.smoke.scenarios import SCENARIOS

    ctx = RunContext(run_id=new_run_id(), masker=Masker(), ref_prefix=_check_prefix(prefix))
    for scenario in SCENARIOS.values():
        ref = ctx.reference(scenario, tag)
        assert check_reference(ref) == ref
        assert ref.startswith(prefix)


@pytest.mark.parametrize("prefix", ["smoke ", " smoke", "a\tb", "x" * 25])
def test_a_smoke_prefix_outside_the_rule_is_a_usage_error(prefix: str) -> None:
    from walletctl.errors import UsageError
    from walletctl.ops.smoke import _check_prefix

    with pytest.raises(UsageError, match="--ref-prefix"):
        _check_prefix(prefix)
