"""What tests/history/test_plans.py and tests/pg/test_plans.py run against a history while
they record the plan of every statement it makes: the append path (the duplicate check,
a movement's identity, the tip, the completions, the rulebook) and every look-up a command
makes (history --ref, --unknown, --since, --until, --user, --last; an order's entries; the
batch's probe; heads and anchors; approvals by id and reference). A listing of everything
is not here: it reads every entry by design."""

from __future__ import annotations

from walletctl.history.store import Completion, Filters, HistoryStore, Intent

OPERATOR = "ana"


def intent(i: int, **kw: object) -> Intent:
    base: dict[str, object] = dict(
        time=f"2026-11-{1 + i % 28:02d}T10:00:00.000Z", os_user=OPERATOR, host="desk-1",
        profile="desk", base_url="https://gw.example", operation="refund",
        original_ref=f"ORD-{i}", new_ref=f"ORD-{i}-R1", amount="1.50", currency="EUR",
        merchant_id="M-1", store_id="S-1")
    base.update(kw)
    return Intent(**base)  # type: ignore[arg-type]


def prefill(store: HistoryStore, entries: int) -> None:
    """Entries of a year before, completed, so that a planner with statistics sees a table
    of some size (a tiny one is walked whole whatever its indexes)."""
    for at in range(0, entries, 500):
        ids = store.begin_many(
            intent(i, time=f"2025-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:"
                           f"{i % 60:02d}.000Z", original_ref=f"OLD-{i}", new_ref=f"OLD-{i}-R1")
            for i in range(at, min(at + 500, entries)))
        store.complete_many([(e, Completion(time="2025-01-02T00:00:00.000Z",
                                            outcome="approved")) for e in ids])


def appends(store: HistoryStore) -> None:
    """Begins (with and without a new reference), the duplicate check finding them again,
    completions (one unknown), a single begin and complete, a movement's identity."""
    todo = [intent(i) for i in range(20)] + [intent(i, new_ref=None) for i in range(20, 23)]
    ids = store.begin_many(todo)
    assert store.begin_many(todo[:3] + todo[20:21]) == ids[:3] + ids[20:21]
    store.complete_many([(e, Completion(time="2026-11-27T10:00:00.000Z", outcome="approved",
                                        http_status=200)) for e in ids[:15]])
    store.complete(ids[15], Completion(time="2026-11-27T10:00:00.000Z", outcome="unknown"))
    one = store.begin(intent(99))
    store.complete(one, Completion(time="2026-11-27T10:00:00.000Z", outcome="declined"))
    # the intent store (history off) deletes a completed entry's events
    assert store.movement(todo[0]) == ((ids[0], "approved") if store.chained else None)
    assert store.movement(todo[21]) == (ids[21], "unknown")
    # a batch's group of sends: 500 references checked at once
    assert store._begun([intent(i, original_ref=f"NEW-{i}", new_ref=f"NEW-{i}-R1")
                         for i in range(500)]) == {}


LOOK_UPS = (
    Filters(ref="ORD-3"), Filters(ref="ORD-3-R1"), Filters(ref="ORD-3", limit=50),
    Filters(outcome="unknown"), Filters(outcome="unknown", limit=50),
    Filters(since="2026-11-20T00:00:00.000Z"), Filters(until="2025-01-01T00:00:05.000Z"),
    Filters(since="2026-11-20T00:00:00.000Z", limit=50), Filters(os_user=OPERATOR, limit=50),
    Filters(original_ref="ORD-4"), Filters(original_ref="ORD-4", operation="refund",
                                           outcome="unknown"),
)


def look_ups(store: HistoryStore) -> None:
    for filters in LOOK_UPS:
        list(store.entries(filters))
        store.count(filters)
    assert [e.original_ref for e in store.entries(Filters(ref="ORD-3-R1"))] == ["ORD-3"]
    unknown = {e.original_ref for e in store.entries(Filters(outcome="unknown"))}
    assert unknown >= {"ORD-15", "ORD-16", "ORD-20"}
    assert "ORD-14" not in unknown
    store.unresolved(merchant_id="M-1", store_id="S-1", operation="refund",
                     original_ref="ORD-17")
    store.recent(merchant_id="M-1", store_id="S-1", operation="refund",
                 original_ref="ORD-1", since="2026-11-01T00:00:00.000Z")
    store.touched_many(operation="refund", original_refs=["ORD-1", "ORD-2"], batch_id="B",
                       since="2026-11-01T00:00:00.000Z")
    head = store.head()
    assert head is not None
    assert store.hashes([1, 2, head.event])[head.event] == head.hash
    assert store.verify((head.event - 2, store.hashes([head.event - 2])[head.event - 2])) \
        == (2, None)
