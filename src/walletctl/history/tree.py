"""The history's Merkle tree (RFC 9162) as stored beside its events: one row per complete
subtree, ``merkle_nodes (level, idx, hash)``, written with the events that complete it
(:class:`walletctl.history.chain.Tip`) and never changed. Leaf ``seq - 1`` is the hash of
event ``seq``'s canonical form (:func:`walletctl.history.chain.canonical`), so the tree of
size n is the history's first n events. A root, an inclusion proof or a consistency proof
reads O(log n) nodes (:mod:`walletctl.history.merkle`), whatever the history's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from walletctl.errors import ConfigError
from walletctl.history import merkle
from walletctl.history.merkle import Frontier

# (sql with ? placeholders, args) -> rows
Query = Callable[[str, tuple[Any, ...]], Iterable[tuple[Any, ...]]]

INSERT_NODE = "INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)"
_PER_QUERY = 200  # nodes asked for per query (two parameters each)


class TreeError(ConfigError):
    """A node the tree should hold is missing (never filled, or cut): exit 3."""

    def __init__(self, message: str, hint: str = "a shared history's owner runs `walletctl "
                 "history setup` once to fill its tree") -> None:
        super().__init__(message, hint=hint)


def fetch_nodes(query: Query, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    """The stored hashes of these nodes (a query per _PER_QUERY of them)."""
    wanted = sorted(set(keys))
    found: dict[tuple[int, int], bytes] = {}
    for at in range(0, len(wanted), _PER_QUERY):
        chunk = wanted[at:at + _PER_QUERY]
        terms = " OR ".join(["(level = ? AND idx = ?)"] * len(chunk))
        rows = query(f"SELECT level, idx, hash FROM merkle_nodes WHERE {terms}",  # noqa: S608 - placeholders only
                     tuple(v for key in chunk for v in key))
        found.update(((int(level), int(idx)), bytes(digest)) for level, idx, digest in rows)
    missing = [k for k in wanted if k not in found]
    if missing:
        level, idx = missing[0]
        raise TreeError(f"the Merkle tree has no node at level {level}, index {idx} "
                        "(it is incomplete)")
    return found


def read_frontier(query: Query, size: int) -> Frontier:
    """The right edge of the stored tree of ``size`` leaves (to append to it)."""
    keys = Frontier.keys(size)
    found = fetch_nodes(query, keys) if keys else {}
    return Frontier(size, [(level, idx, found[(level, idx)]) for level, idx in keys])


def stored_size(query: Query) -> int:
    """How many leaves the stored tree has (an index look-up)."""
    rows = list(query("SELECT MAX(idx) FROM merkle_nodes WHERE level = 0", ()))
    return 0 if not rows or rows[0][0] is None else int(rows[0][0]) + 1


def tip_frontier(query: Query, events: int, leaves: int | None = None,
                 ) -> tuple[Frontier, list[tuple[int, int, bytes]]]:
    """The tree's right edge to append event ``events + 1`` to, and the nodes of events
    already in the chain without their leaves (written by hand, past the client: added now,
    in the appending transaction). Refused when the tree holds more leaves than the chain
    has events: the newest events were deleted after they were written. ``leaves``: the
    stored tree's size, when the caller has read it (:func:`stored_size`)."""
    from walletctl.history.chain import SELECT_EVENTS, event_leaf

    if leaves is None:
        leaves = stored_size(query)
    if leaves > events:
        raise TreeError(f"the Merkle tree holds {leaves} events but the chain ends at event "
                        f"{events}: events were deleted after they were written (`walletctl "
                        "history verify --anchor FILE` names them); nothing is appended",
                        hint="keep the history as evidence, as it is")
    frontier = read_frontier(query, leaves)
    nodes: list[tuple[int, int, bytes]] = []
    if leaves < events:
        for row in query(SELECT_EVENTS, (leaves,)):
            if int(row[0]) != frontier.size + 1:
                raise TreeError(f"event {frontier.size + 1} is missing: the tree cannot "
                                "be extended", hint="keep the history as evidence, as it is")
            nodes += frontier.add(event_leaf(int(row[0]), row[1:-2]))
    return frontier, nodes


def root(query: Query, size: int) -> bytes:
    return merkle.gather(lambda get: merkle.root_hash(get, size),
                         lambda keys: fetch_nodes(query, keys))


def inclusion(query: Query, index: int, size: int) -> list[bytes]:
    """The inclusion proof of leaf ``index`` (event ``index + 1``) in the tree of ``size``."""
    return merkle.gather(lambda get: merkle.inclusion_path(get, index, size),
                         lambda keys: fetch_nodes(query, keys))


def inclusions(query: Query, indexes: Iterable[int], size: int) -> dict[int, list[bytes]]:
    """Inclusion proofs of several leaves, their nodes fetched together."""
    wanted = sorted(set(indexes))

    def compute(get: merkle.NodeGetter) -> dict[int, list[bytes]]:
        return {i: merkle.inclusion_path(get, i, size) for i in wanted}

    return merkle.gather(compute, lambda keys: fetch_nodes(query, keys))


def consistency(query: Query, old: int, new: int) -> list[bytes]:
    return merkle.gather(lambda get: merkle.consistency_proof(get, old, new),
                         lambda keys: fetch_nodes(query, keys))


def fill(query: Query, insert_many: Callable[[list[tuple[int, int, bytes]]], None],
         events: Callable[[int], Iterator[tuple[Any, ...]]], *, batch: int = 20_000) -> int:
    """Add to the stored tree the leaves of the events it does not hold yet (a history
    written before the tree, or cut short): ``events(after)`` yields the events numbered
    after ``after`` as SELECT_EVENTS reads them. Returns the leaves added."""
    from walletctl.history.chain import event_leaf

    size = stored_size(query)
    frontier = read_frontier(query, size)
    pending: list[tuple[int, int, bytes]] = []
    added = 0
    for row in events(size):
        seq, values = int(row[0]), row[1:-2]
        if seq != frontier.size + 1:
            raise TreeError(f"event {frontier.size + 1} is missing: the tree cannot be filled")
        pending += frontier.add(event_leaf(seq, values))
        added += 1
        if len(pending) >= batch:
            insert_many(pending)
            pending = []
    if pending:
        insert_many(pending)
    return added
