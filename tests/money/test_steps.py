"""The money protocol's one order of steps (ops/money/steps.py): the sequence takes STEPS in
order, a dry run ends at ``predicted``, ``settle`` answering AGAIN sends once more, a step
raising Finished ends the movement; a single movement and a batch row supply every step."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from walletctl.ops.batch.runner import RowSteps
from walletctl.ops.money.pipeline import Single
from walletctl.ops.money.steps import AGAIN, STEPS, Finished, run, run_async


class Taken:
    """Steps that note their names; ``settle`` asks ``again`` times for another send."""

    def __init__(self, again: int = 0, finish_at: str | None = None) -> None:
        self.names: list[str] = []
        self.again = again
        self.finish_at = finish_at

    def __getattr__(self, name: str) -> Any:
        if name not in STEPS:
            raise AttributeError(name)

        def step(*args: Any) -> Any:
            self.names.append(name)
            if name == self.finish_at:
                raise Finished(f"ended at {name}")
            if name == "lock":
                return self._held()
            if name == "settle":
                if self.again:
                    self.again -= 1
                    return AGAIN
                return "settled"
            return "predicted" if name == "predicted" else None
        return step

    @contextmanager
    def _held(self) -> Iterator[None]:
        self.names.append("held")
        yield
        self.names.append("released")


def test_the_steps_run_in_their_one_order() -> None:
    steps = Taken()
    assert run(steps, dry_run=False) == "settled"
    order = [n for n in STEPS if n != "predicted"]
    assert steps.names == ["lock", "held", *order[1:], "released"]


def test_a_dry_run_ends_after_the_guard() -> None:
    steps = Taken()
    assert run(steps, dry_run=True) == "predicted"
    assert steps.names[-3:] == ["guard", "predicted", "released"]


def test_again_records_and_sends_once_more_under_the_same_plan() -> None:
    steps = Taken(again=2)
    run(steps, dry_run=False)
    tail = steps.names[steps.names.index("approve") + 1:-1]
    assert tail == ["record", "send", "settle"] * 3


def test_a_step_that_finishes_ends_the_movement_and_releases_the_lock() -> None:
    steps = Taken(finish_at="plan")
    assert run(steps, dry_run=False) == "ended at plan"
    assert steps.names[-2:] == ["plan", "released"]


def test_the_async_driver_runs_the_same_order() -> None:
    class Async(Taken):
        @asynccontextmanager
        async def _aheld(self) -> AsyncIterator[None]:
            self.names.append("held")
            yield
            self.names.append("released")

        def __getattr__(self, name: str) -> Any:
            inner = super().__getattr__(name)

            async def step(*args: Any) -> Any:
                answer = inner(*args)
                return self._aheld() if name == "lock" else answer
            return step

    steps = Async(again=1)
    assert asyncio.run(run_async(steps, dry_run=False)) == "settled"
    order = [n for n in STEPS if n != "predicted"]
    assert steps.names[:2] == ["lock", "held"]
    assert steps.names[-1] == "released"
    assert [n for n in steps.names if n not in ("held", "released")] == \
        [*order, "record", "send", "settle"]


@pytest.mark.parametrize("kind", [Single, RowSteps])
def test_a_single_movement_and_a_batch_row_supply_every_step(kind: type) -> None:
    assert all(callable(getattr(kind, name, None)) for name in STEPS), kind
