"""The operations table (models/operations.py) is the one declaration: the type checker's
spellings, the maps derived from it and the registered commands agree with it."""

from __future__ import annotations

from typing import get_args

from walletctl.models import operations
from walletctl.models.followup import FollowUpType
from walletctl.models.ledger import kind_of
from walletctl.models.operations import FOLLOW_UPS, LedgerKind, Op, RecordKind, WireType


def test_the_literals_spell_the_table() -> None:
    assert get_args(Op) == tuple(op.name for op in FOLLOW_UPS)
    assert get_args(RecordKind) == tuple(op.kind for op in FOLLOW_UPS)
    assert get_args(WireType) == tuple(op.wire_type for op in FOLLOW_UPS)
    assert get_args(LedgerKind) == operations.LEDGER_KINDS
    assert operations.LEDGER_KINDS[:2] == operations.ORIGINAL_KINDS


def test_the_history_and_sandbox_lists_derive_from_the_table() -> None:
    from walletctl.config.profile import HISTORY_OPERATIONS
    from walletctl.history.sqlite import MONEY
    from walletctl.ops.recon.compare import OPERATIONS
    from walletctl.render.followup import VERB
    from walletctl.sandbox.engine import RECORD_TYPES
    from walletctl.sandbox.store import KINDS

    names = ("checkout", "capture", "refund", "reverse", "authorize")
    assert operations.HISTORY_NAMES == HISTORY_OPERATIONS == OPERATIONS == names
    assert MONEY == "('checkout', 'capture', 'refund', 'reverse', 'authorize')"
    assert VERB == {"capture": "Captured", "refund": "Refunded", "reverse": "Reversed"}
    assert set(RECORD_TYPES) == set(KINDS) == set(operations.LEDGER_KINDS)
    # a batch's derived references must keep their prefixes: journals on disk name them
    assert operations.BATCH_TAG_OF == {"capture": "cap", "refund": "rfd", "reverse": "rev"}


def test_each_wire_type_is_read_back_as_the_operations_record_kind() -> None:
    wire_types = get_args(get_args(FollowUpType)[0])
    for op in FOLLOW_UPS:
        assert op.wire_type in wire_types, op
        assert kind_of(op.wire_type) == op.kind, op
        assert kind_of(op.wire_type.upper()) == op.kind, op
    assert kind_of("ecom.reversalPreauthorisation") == "reversal"  # the British spelling
    assert kind_of("ecom.preAuthorisation") == kind_of("ECOM.PREAUTHORIZATION") == "preauth"


def test_the_derived_maps_and_rules() -> None:
    assert operations.OP_OF_KIND == {"capture": "capture", "refund": "refund",
                                     "reversal": "reverse"}
    assert operations.TAG_OF == {"capture": "CAP", "refund": "REF", "reverse": "REV"}
    assert {"refund", "reverse"} == operations.CONFIRMED  # a capture asks nothing
    tags = [op.tag for op in FOLLOW_UPS]
    assert len(set(tags)) == len(tags), "two operations would derive the same references"
    assert all(op.policy_keys == (f"history.approvals.{op.name}",) for op in FOLLOW_UPS)


def test_every_operation_is_a_command_with_its_tag_in_the_help() -> None:

    from walletctl.cli.main import app

    ctx = app.make_context("walletctl", ["--help"], resilient_parsing=True)
    for op in FOLLOW_UPS:
        command = app.get_command(ctx, op.name)
        assert command is not None, op.name
        helps = " ".join(p.help or "" for p in command.params)
        assert f"REF-{op.tag}1" in helps, (op.name, helps)
