"""Group commit: what must be durable before a request leaves, written once per loop turn.

Every row's ``sent`` state (the journal) and its history entry must be committed before its
request leaves. Committing them row by row costs two SQLite transactions per row, a fifth
of a batch's CPU at concurrency 64. Instead, each row about to send adds itself here and
waits; the first one of an event-loop turn schedules one write for the turn (``call_soon``
runs after every task woken in this turn has added itself), or, when the turn is long, a
row that finds the group open for over ``max_wait`` writes it; every waiter goes on only
once the write that holds its row has committed. The order per row is unchanged (journal,
then history, then the request) and so is what a kill at any point leaves behind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class GroupCommit(Generic[_T]):
    """``await commit(item)`` returns once ``write([..., item, ...])`` has returned.

    ``max_wait``: a long turn (many answers arriving together at high concurrency) would
    hold its first rows back until its end; once a group's first row has waited this long,
    the group is written at once, by the row that noticed. A row's request then leaves at
    most about ``max_wait`` later than it would unbatched.
    """

    def __init__(self, write: Callable[[list[_T]], None], *, max_wait: float = 0.001,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._write = write
        self._max_wait = max_wait
        self._clock = clock
        self._pending: list[_T] = []
        self._done: asyncio.Future[None] | None = None
        self._opened = 0.0  # when the pending group's first row added itself

    async def __call__(self, item: _T) -> None:
        self._pending.append(item)
        done = self._done
        if done is None:
            loop = asyncio.get_running_loop()
            done = self._done = loop.create_future()
            self._opened = self._clock()
            loop.call_soon(self._flush)
        elif self._clock() - self._opened >= self._max_wait:
            self._flush()  # this turn is long: write the group now, this row included
        # shield: one waiter cancelled (Ctrl-C twice) must not cancel the others' write
        await asyncio.shield(done)

    def _flush(self) -> None:
        done, self._done = self._done, None
        if done is None:  # already written by a row that found the group waiting too long
            return
        items, self._pending = self._pending, []
        try:
            self._write(items)
        except Exception as exc:
            done.set_exception(exc)
            done.exception()  # retrieved here too: no "never retrieved" noise if all left
        else:
            done.set_result(None)
