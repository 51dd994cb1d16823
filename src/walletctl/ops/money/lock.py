"""One lock per original (merchant id, store id, reference) on this machine, across processes,
and on a shared history also in its database (docs/money.md, "One movement at a time on an
original"). The machine's locks are POSIX byte-range locks on one file (:func:`lock_path`),
a byte per key at an offset from its hash; the kernel drops a killed process's locks. They
belong to the process: a batch serialises its own rows with asyncio locks first. Without
``fcntl`` (Windows) the lock is a no-op.
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


def lock_key(profile: Profile, original_ref: str) -> str:
    """One original transaction: its gateway (two sandboxes' orders of the same name are not
    one order), merchant, store and reference."""
    return (f"{profile.base_url.rstrip('/')}\0{profile.merchant_id}\0{profile.store_id}"
            f"\0{original_ref}")


class MoneyLocks:
    """Per-original locks of this process (one open descriptor on the lock file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _check_private(path.parent)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)

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


@contextmanager
def hold_original(store: HistoryStore | None, key: str, *, what: str,
                  on_wait: Callable[[str], None] | None = None,
                  limit: float = WAIT_LIMIT) -> Iterator[None]:
    """The money protocol's per-original lock: this machine's, then (a shared history)
    the desk's, held from the lookup to the recorded answer."""
    locks = money_locks()
    _wait(locks, key, what=what, on_wait=on_wait, limit=limit)
    try:
        shared = store.shared_locks() if store is not None else None
        if shared is None:
            yield
            return
        try:  # the history's first use: a database that cannot be reached stops it here
            _wait(shared, key, what=what, on_wait=on_wait, limit=limit)
        except StorageError as exc:
            raise StorageError(f"{exc.message}; nothing was sent", hint=exc.hint) from None
        try:
            yield
        finally:
            shared.release(key)
    finally:
        locks.release(key)


_OPEN: dict[Path, MoneyLocks] = {}


def lock_path() -> Path:
    """``walletctl/money.lock`` in the user's runtime directory (``$XDG_RUNTIME_DIR``), else
    in ``walletctl-UID`` in the system's temporary directory: one file per machine user,
    whatever profile, history file or ``WALLETCTL_AUDIT_LOG`` a command uses."""
    import tempfile

    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "walletctl" / "money.lock"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"walletctl-{uid}" / "money.lock"


def _check_private(folder: Path) -> None:
    """A lock folder in a shared directory must be ours and closed to others (a folder
    someone else made, or a symlink to one, could hold our locks)."""
    st = os.lstat(folder)
    import stat

    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    if not stat.S_ISDIR(st.st_mode) or not mine or st.st_mode & 0o077:
        raise ConfigError(f"lock folder {folder}: must be a directory of this user's with "
                          "mode 0700", hint=f"remove it (rm -r {folder}); walletctl makes it anew")


def money_locks() -> MoneyLocks:
    """This process's locks (one per file: closing a second descriptor on the file would
    drop the process's locks on it)."""
    path = lock_path()
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
async def hold_row(locks: MoneyLocks, desk: DeskLocks | None, key: str,
                   original: str) -> AsyncIterator[None]:
    """A batch row's form of :func:`hold_original` (never blocks the event loop): this
    machine's lock, then the desk's, taken with other rows' (see :class:`DeskLocks`)."""
    delay = 0.002
    while not locks.try_acquire(key):
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    try:
        if desk is None:
            yield
            return
        await desk.acquire(key, original)
        try:
            yield
        finally:
            desk.release(key)
    finally:
        locks.release(key)
