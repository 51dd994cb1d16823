"""The operations table (models/operations.py) is the one declaration: the type checker's
spellings, the maps derived from it and the registered commands agree with it."""

from __future__ import annotations

from typing import get_args

from walletctl.models import operations
from walletctl.models.followup import FollowUpType
from walletctl.models.ledger import kind_of
from walletctl.models.operations import FOLLOW_UPS, Op, RecordKind


def test_the_literals_spell_the_table() -> None:
    assert get_args(Op) == tuple(op.name for op in FOLLOW_UPS)
    assert set(get_args(RecordKind)) == {op.kind for op in FOLLOW_UPS}


def test_each_wire_type_is_read_back_as_the_operations_record_kind() -> None:
    wire_types = get_args(get_args(FollowUpType)[0])
    for op in FOLLOW_UPS:
        assert op.wire_type in wire_types, op
        assert kind_of(op.wire_type) == op.kind, op


def test_the_derived_maps_and_rules() -> None:
    assert operations.OP_OF_KIND == {"capture": "capture", "refund": "refund",
                                     "reversal": "reverse"}
    assert operations.TAG_OF == {"capture": "CAP", "refund": "REF", "reverse": "REV"}
    assert {"refund", "reverse"} == operations.CONFIRMED  # a capture asks nothing
    tags = [op.tag for op in FOLLOW_UPS]
    assert len(set(tags)) == len(tags), "two operations would derive the same references"
    assert all(op.policy_keys == (f"history.approvals.{op.name}",) for op in FOLLOW_UPS)


def test_every_operation_is_a_command_with_its_tag_in_the_help() -> None:
    import typer

    from walletctl.cli.main import app

    group = typer.main.get_command(app)
    ctx = group.make_context("walletctl", ["--help"], resilient_parsing=True)
    for op in FOLLOW_UPS:
        command = group.get_command(ctx, op.name)  # type: ignore[attr-defined]
        assert command is not None, op.name
        helps = " ".join(p.help or "" for p in command.params)
        assert f"REF-{op.tag}1" in helps, (op.name, helps)
