"""One lock per order (the gateway's origin, merchant id, store id, original reference), shared
by everyone who records into the same history (docs/money.md, "One movement at a time on an
order"). A shared history (PostgreSQL) keeps it in its database as a lease
(``postgres.LeaseLocks``); a history file keeps it beside itself (:func:`lock_path`): POSIX
byte-range locks on one file, a byte per key at an offset from its hash, dropped by the
kernel when a process dies. They belong to the process: a batch serialises its own rows with
asyncio locks first. Without ``fcntl`` (Windows) the file lock is a no-op.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.constants import Env
from walletctl.errors import ConfigError, HeldError
from walletctl.history.store import StorageError

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.history.store import HistoryStore, SharedLocks

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

WAIT_LIMIT = 120.0  # seconds a single command waits behind another before giving up
_SPAN = 1 << 40  # offsets within the file (sparse: the file itself stays empty)
_BUSY = (errno.EAGAIN, errno.EACCES)


def gateway_origin(base_url: str) -> str:
    """The gateway a base URL names, however it is spelled: scheme, lowercase host, port
    (the scheme's default when none is given); ``localhost``, 127.0.0.0/8 and ``::1`` are one
    host (``loopback``). The path, user info, query and a trailing slash do not count."""
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"http": 80, "https": 443}.get(scheme, 0)
    host = (parts.hostname or "").rstrip(".").lower()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost" or host.endswith(".localhost")
    return f"{scheme}://{'loopback' if loopback else host}:{port}"


def lock_key(profile: Profile, original_ref: str) -> str:
    """One order: its gateway's origin (two sandboxes' orders of the same name are not one
    order; two spellings of one gateway are one), merchant, store and original reference."""
    return (f"{gateway_origin(profile.base_url)}\0{profile.merchant_id}\0{profile.store_id}"
            f"\0{original_ref}")


class MoneyLocks:
    """Per-original locks of this process (one open descriptor on the lock file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                               0o600)
        except OSError as exc:
            raise ConfigError(
                f"money lock {path}: cannot open it: {exc.strerror or exc}",
                hint=f"it lives beside the history file; set {Env.AUDIT_LOG} or the "
                     "profile's [history] path to a file in a folder you can write") from None

    @staticmethod
    def _offset(key: str) -> int:
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % _SPAN

    def try_acquire(self, key: str) -> bool:
        if fcntl is None:
            return True
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, self._offset(key))
        except OSError as exc:
            if exc.errno in _BUSY:
                return False
            raise
        return True

    def release(self, key: str) -> None:
        if fcntl is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, self._offset(key))

    def holder(self, key: str) -> str | None:
        return "another walletctl on this machine"


def _wait(locks: MoneyLocks | SharedLocks, key: str, *, what: str,
          on_wait: Callable[[str], None] | None, limit: float) -> None:
    """Until ``key`` is ours: polls while another holds it (saying who, once), gives up
    after ``limit`` seconds with :class:`HeldError` naming the holder."""
    if locks.try_acquire(key):
        return
    who = locks.holder(key) or "another walletctl"
    if on_wait is not None:
        on_wait(f"waiting: {who} is moving money on {what}")
    deadline = time.monotonic() + limit
    delay = 0.005
    while not locks.try_acquire(key):
        if time.monotonic() > deadline:
            who = locks.holder(key) or who
            raise HeldError(
                f"{what} stayed busy for {limit:.0f} s ({who} is moving money on it); "
                "nothing was sent",
                hint=f"{who} (a prompt left waiting?) holds {what}; see "
                     f"`walletctl history --ref {what}`, then run the command again")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


class Held:
    """An order's lock while it is held: :meth:`confirm`, just before the request is sent,
    proves it still is (a desk lease can lapse under a frozen client)."""

    def __init__(self, shared: SharedLocks | None, key: str, what: str) -> None:
        self._shared, self._key, self._what = shared, key, what

    def confirm(self) -> None:
        if self._shared is not None and not self._shared.confirm(self._key):
            raise HeldError(
                f"the desk's lock on {self._what} lapsed while this command held it (its "
                "connection to the history stopped answering); nothing was sent",
                hint=f"another operator may be moving money on {self._what}: run the "
                     "command again (it looks the order up afresh)")


@contextmanager
def hold_original(store: HistoryStore | None, key: str, *, what: str,
                  on_wait: Callable[[str], None] | None = None,
                  limit: float = WAIT_LIMIT) -> Iterator[Held]:
    """The money protocol's per-order lock, held from the lookup to the recorded answer:
    the shared history's lease, or the file beside the history file."""
    shared = store.shared_locks() if store is not None else None
    if shared is None:
        locks = money_locks(store)
        _wait(locks, key, what=what, on_wait=on_wait, limit=limit)
        try:
            yield Held(None, key, what)
        finally:
            locks.release(key)
        return
    try:  # the history's first use: a database that cannot be reached stops it here
        _wait(shared, key, what=what, on_wait=on_wait, limit=limit)
    except StorageError as exc:
        raise StorageError(f"{exc.message}; nothing was sent", hint=exc.hint) from None
    try:
        yield Held(shared, key, what)
    finally:
        shared.release(key)


_OPEN: dict[Path, MoneyLocks] = {}
LOCK_SUFFIX = ".lock"


def lock_path(store: HistoryStore | None) -> Path:
    """The lock file of the orders recorded in ``store``'s file: ``<history file>.lock``
    beside it, so everyone who records into one history file takes turns, whatever runtime
    or temporary directory their environment names; with no store (a batch with the
    history off), beside the intent store."""
    from walletctl.history import INTENTS_NAME, data_dir

    history = (store.local_file() if store is not None else None) or data_dir() / INTENTS_NAME
    return history.with_name(history.name + LOCK_SUFFIX)


def money_locks(store: HistoryStore | None) -> MoneyLocks:
    """This process's locks on ``store``'s lock file (one descriptor per file: closing a
    second one on the file would drop the process's locks on it)."""
    path = lock_path(store)
    found = _OPEN.get(path)
    if found is None:
        found = _OPEN[path] = MoneyLocks(path)
    return found


class DeskLocks:
    """A batch's rows' locks at the desk (a shared history), taken a group at a time: what
    rows ask within one turn of the event loop is released, tried and ``probe``d (their
    history check) in three round trips; a row whose original is busy asks again later."""

    def __init__(self, shared: SharedLocks,
                 probe: Callable[[list[str]], set[str]] | None = None) -> None:
        self._shared = shared
        self._probe = probe
        self._asked: list[tuple[str, str, asyncio.Future[bool]]] = []
        self._given_back: list[str] = []
        self._scheduled = False
        self.touched: dict[str, bool] = {}  # original -> the probe's answer, until used

    async def acquire(self, key: str, original: str) -> None:
        delay = 0.002
        while True:
            loop = asyncio.get_running_loop()
            answer: asyncio.Future[bool] = loop.create_future()
            self._asked.append((key, original, answer))
            self._schedule()
            if await answer:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    def release(self, key: str) -> None:
        self._given_back.append(key)
        self._schedule()

    def _schedule(self) -> None:
        """One flush per turn of the event loop, for whatever was asked or given back."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        """Give back what is still held (the end of the run)."""
        given, self._given_back = self._given_back, []
        self._shared.release_many(given)

    def _flush(self) -> None:
        self._scheduled = False
        asked, self._asked = self._asked, []
        given, self._given_back = self._given_back, []
        try:
            self._shared.release_many(given)
            got = self._shared.try_acquire_many([key for key, _, _ in asked])
            held = [original for (_, original, _), ok in zip(asked, got, strict=True) if ok]
            if held and self._probe is not None:
                touched = self._probe(held)
                self.touched.update((ref, ref in touched) for ref in held)
        except BaseException as exc:
            for _, _, answer in asked:
                if not answer.done():
                    answer.set_exception(exc)
            return
        for (_, _, answer), ok in zip(asked, got, strict=True):
            if not answer.done():
                answer.set_result(ok)


@asynccontextmanager
async def hold_row(locks: MoneyLocks | None, desk: DeskLocks | None, key: str,
                   original: str) -> AsyncIterator[None]:
    """A batch row's form of :func:`hold_original` (never blocks the event loop): the
    desk's lease taken with other rows' (see :class:`DeskLocks`), else the file's lock."""
    if desk is not None:
        await desk.acquire(key, original)
        try:
            yield
        finally:
            desk.release(key)
        return
    assert locks is not None, "a batch without a shared history locks the history's file"
    delay = 0.002
    while not locks.try_acquire(key):
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    try:
        yield
    finally:
        locks.release(key)
