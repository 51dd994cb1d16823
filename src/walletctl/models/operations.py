"""The follow-up operations, each declared once.

A row of :data:`FOLLOW_UPS` says everything walletctl needs to know about one money operation
on an existing checkout: the command's name, the record kind (and noun) it creates at the
gateway and that record's wire type, the tag of the references derived for it
(``ORDER-1-CAP1``) and of a batch's (``cap-...``), whether it asks for confirmation before
sending, the profile keys of its policy, its operation name in the history, the verb its
result is told with and the provider code the sandbox approves it with. The maps the rest of
walletctl uses (record kind -> operation, operation -> tag, the operations that confirm, the
history's money operations, ...) are derived here; the commands, their completions and the
man page follow from the commands registered from :data:`NAMES`.

``Op``, ``RecordKind``, ``WireType`` and ``LedgerKind`` are the static spellings of the same
names for the type checker (a ``Literal`` cannot be computed); tests/core/test_operations.py
keeps them equal to the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Op = Literal["capture", "refund", "reverse"]
RecordKind = Literal["capture", "refund", "reversal"]
WireType = Literal["ecom.capture", "ecom.refund", "ecom.reversalPreauthorization"]
# every record kind the ledger knows: the originals', then the follow-ups'
LedgerKind = Literal["sale", "preauth", "capture", "refund", "reversal"]


@dataclass(frozen=True)
class Operation:
    name: Op  # the command, and the operation's name in the history and in batch files
    kind: RecordKind  # the record it creates (and the noun messages use)
    wire_type: WireType  # the request's and that record's ``type`` on the wire
    tag: str  # derived references: ORDER-1-<tag>1, ORDER-1-<tag>2, ...
    confirms: bool  # asks y/N (or --yes) before it sends
    policy_keys: tuple[str, ...]  # the profile keys of its rules
    past: str  # its result's verb: "Refunded 5.00 EUR of ORDER-1 as ORDER-1-REF1"
    approved_code: str  # the providerStateCode of its record when approved (the sandbox's)
    batch_tag: str  # a batch's derived references: <batch_tag>-<batch id>-<digest>

    @property
    def history(self) -> str:
        """Its operation name in the history."""
        return self.name


def _policy(name: str) -> tuple[str, ...]:
    return (f"history.approvals.{name}",)


FOLLOW_UPS: Final[tuple[Operation, ...]] = (
    Operation("capture", "capture", "ecom.capture", "CAP", False, _policy("capture"),
              "Captured", "CapturedByProvider", "cap"),
    Operation("refund", "refund", "ecom.refund", "REF", True, _policy("refund"),
              "Refunded", "RefundedByProvider", "rfd"),
    Operation("reverse", "reversal", "ecom.reversalPreauthorization", "REV", True,
              _policy("reverse"), "Reversed", "ReversedByProvider", "rev"),
)
# The money movements that are not follow-ups: each opens an order (a sale or a
# pre-authorisation) and names the operation in the history.
ORIGINATIONS: Final[tuple[str, ...]] = ("checkout", "authorize")
ORIGINAL_KINDS: Final[tuple[LedgerKind, ...]] = ("sale", "preauth")

BY_NAME: Final[dict[str, Operation]] = {op.name: op for op in FOLLOW_UPS}
NAMES: Final[tuple[Op, ...]] = tuple(op.name for op in FOLLOW_UPS)
# the record kind (and noun) each operation creates, and back
KIND_OF_OP: Final[dict[str, RecordKind]] = {op.name: op.kind for op in FOLLOW_UPS}
OP_OF_KIND: Final[dict[str, Op]] = {op.kind: op.name for op in FOLLOW_UPS}
TAG_OF: Final[dict[str, str]] = {op.name: op.tag for op in FOLLOW_UPS}
WIRE_TYPE_OF: Final[dict[str, WireType]] = {op.name: op.wire_type for op in FOLLOW_UPS}
CONFIRMED: Final[frozenset[str]] = frozenset(op.name for op in FOLLOW_UPS if op.confirms)
OP_OF_WIRE_TYPE: Final[dict[str, Op]] = {op.wire_type: op.name for op in FOLLOW_UPS}
PAST_OF: Final[dict[str, str]] = {op.name: op.past for op in FOLLOW_UPS}
BATCH_TAG_OF: Final[dict[str, str]] = {op.name: op.batch_tag for op in FOLLOW_UPS}
# every operation that moves money, as the history names it (its rules, recon, the
# database's checks): checkout, the follow-ups, authorize
HISTORY_NAMES: Final[tuple[str, ...]] = (ORIGINATIONS[0], *NAMES, *ORIGINATIONS[1:])
LEDGER_KINDS: Final[tuple[LedgerKind, ...]] = (*ORIGINAL_KINDS,
                                                *(op.kind for op in FOLLOW_UPS))
