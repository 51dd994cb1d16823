"""The money protocol's steps in their one order, for a single movement and a batch row alike.

:func:`sequence` is the order, written once and free of I/O: it yields each step by name
(:class:`Step`) and is sent back what the step gave. A kind of movement supplies one method
per step name — a single movement (:mod:`.pipeline`, sync, one request) and a batch row
(``ops/batch/runner``, async, its journal, group commit, rate limit and retries inside its
own step methods) — and a driver runs the sequence on it: :func:`run` calls each step,
:func:`run_async` awaits the ones that are coroutines. Neither driver nor the steps order
anything: a step ends the movement early by raising :class:`Finished`, and the ``settle``
step asks for the request again (under the same reference) by answering :data:`AGAIN`.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator
from contextlib import AsyncExitStack, ExitStack
from typing import Any, NamedTuple

# The steps, in the order :func:`sequence` takes them (docs/ARCHITECTURE.md shows them).
STEPS = ("lock", "look_up", "settle_earlier", "plan", "guard", "predicted", "approve",
         "record", "send", "settle")


class Step(NamedTuple):
    name: str  # one of STEPS: the method of the movement's steps that runs it
    args: tuple[Any, ...] = ()


class Finished(Exception):
    """Raised by a step that ends the movement before its last step; ``result`` is its
    result (a batch row's is already journaled; a single movement's is its ``Moved``)."""

    def __init__(self, result: object = None) -> None:
        super().__init__()
        self.result = result


AGAIN = "again"  # the settle step's answer when the request is to be sent again


def sequence(dry_run: bool) -> Generator[Step, Any, Any]:
    """The steps of one movement. ``lock``'s answer is a context the driver holds until the
    movement ends; ``look_up`` answers the original's records (None: a row that needs
    none); a dry run ends after the guard with what ``predicted`` answers."""
    yield Step("lock")
    records = yield Step("look_up")
    same = yield Step("settle_earlier", (records,))  # an earlier intent this one repeats
    plan = yield Step("plan", (records, same))
    yield Step("guard", (plan, records, same))
    if dry_run:
        return (yield Step("predicted", (plan,)))
    hook = yield Step("approve", (plan, same))
    while True:
        yield Step("record", (plan, hook, same))
        answer = yield Step("send", (plan,))  # the answer, or the failure that is its news
        settled = yield Step("settle", (plan, answer))
        if settled is not AGAIN:
            return settled


def run(steps: object, *, dry_run: bool) -> Any:
    """Run :func:`sequence` on ``steps`` (a single movement's: every step a plain call)."""
    order = sequence(dry_run)
    with ExitStack() as held:
        try:
            step = next(order)
            while True:
                try:
                    answer = getattr(steps, step.name)(*step.args)
                    if step.name == "lock":
                        answer = held.enter_context(answer)
                except Finished as done:
                    return done.result
                step = order.send(answer)
        except StopIteration as end:
            return end.value
        finally:
            order.close()


async def run_async(steps: object, *, dry_run: bool) -> Any:
    """Run :func:`sequence` on ``steps`` (a batch row's: a step may be a coroutine, and its
    ``lock`` an async context)."""
    order = sequence(dry_run)
    async with AsyncExitStack() as held:
        try:
            step = next(order)
            while True:
                try:
                    answer = getattr(steps, step.name)(*step.args)
                    if inspect.iscoroutine(answer):
                        answer = await answer
                    if step.name == "lock":
                        answer = await held.enter_async_context(answer)
                except Finished as done:
                    return done.result
                step = order.send(answer)
        except StopIteration as end:
            return end.value
        finally:
            order.close()
