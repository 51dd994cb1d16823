"""One single command's history entry, as a context manager around plan, confirm and send.

    with recording(profile, "refund", ref, reason=reason) as rec:
        plan = ...                       # a RefusedError here is recorded as `refused`
        rec.planned(new_ref, amount, currency)
        rec.sending()                    # the intent is committed before the request leaves
        response = client.followup(...)
        rec.answered(response.state)

On exit the entry is completed from the answer or from the exception (an unknown outcome,
a 5xx or an unparseable answer stays ``unknown``; a kill -9 leaves it ``unknown`` too).

A batch row's entry is a :class:`Recording` too (``ops/batch/runner.BatchAudit``): its writes
go to ``writes``, which collects them for the batch's group commit.
"""

from __future__ import annotations

import getpass
import socket
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from walletctl.constants import ExitCode
from walletctl.errors import DeclinedError, GatewayError, HeldError, WalletctlError
from walletctl.history.policy import amount_text
from walletctl.history.store import (
    Completion,
    HistoryStore,
    Intent,
    StorageError,
    WriteHook,
)
from walletctl.models.entries import now_utc
from walletctl.models.outcome import exit_of, history_outcome, outcome_of_error

if TYPE_CHECKING:
    from walletctl.config.profile import Profile


def os_user() -> str:
    """The account the process runs as (from the user database, not $USER: harder to fake)."""
    import os

    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, AttributeError):  # Windows, or a uid without an entry
        try:
            return getpass.getuser()
        except Exception:  # no env either: still record something
            return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def major_text(amount: Decimal | None, currency: str | None) -> str | None:
    return None if amount is None else amount_text(amount, currency)


def intent_for(profile: Profile, operation: str, *, user: str | None = None,
               host: str | None = None, **fields: Any) -> Intent:
    """An intent at ``profile``'s merchant and store, begun now by this machine's user
    (``user``, ``host``: already found, by a caller that records many)."""
    return Intent(time=now_utc(), os_user=user or os_user(), host=host or socket.gethostname(),
                  profile=profile.name, base_url=profile.base_url, operation=operation,
                  merchant_id=profile.merchant_id, store_id=profile.store_id, **fields)


class Writes(Protocol):
    """Where a recording's entry is written: the history store at once (a single movement),
    or a batch's group commit, which collects the writes (``ops/batch/runner.BatchAudit``)."""

    def begin(self, intent: Intent) -> int: ...

    def complete(self, entry: int, completion: Completion) -> None: ...


@dataclass
class Recording:
    store: HistoryStore | None
    intent: Intent
    entry: int | None = None
    outcome: str | None = None
    http_status: int | None = None
    note: str | None = None
    extra: dict[str, str | None] = field(default_factory=dict)
    # a warning for the operator (the command shows it; none given: a RuntimeWarning)
    warn: Callable[[str], None] | None = None
    writes: Writes | None = None  # where the entry's writes go (None: the store)

    def planned(self, new_ref: str | None, amount: Decimal | None, currency: str | None) -> None:
        self.intent = replace(self.intent, new_ref=new_ref, amount=major_text(amount, currency),
                              currency=currency)

    def sending(self, hook: WriteHook | None = None, *, fresh: bool = False) -> None:
        """Commit the intent: from here on, a crash leaves the entry ``unknown``. ``hook``
        runs in its transaction (an approval spent with it; raising records nothing).
        ``fresh``: a reference this command derived, which no entry may have begun."""
        if self.store is not None and self.entry is None:
            try:
                self.entry = self.store.begin(self.intent, hook=hook, fresh=fresh)
            except StorageError as exc:
                raise StorageError(f"{exc.message}: the intent was not recorded; nothing "
                                   "was sent", hint=exc.hint) from None
            except OSError as exc:
                from walletctl.errors import ConfigError

                raise ConfigError(
                    f"history {self.store.where}: cannot record the intent ({exc}); "
                    "nothing was sent") from None

    def answered(self, state: str, *, http_status: int = 200, note: str | None = None,
                 outcome: str | None = None) -> None:
        self.outcome = outcome or history_outcome(state)
        self.http_status = http_status
        self.note = note or f"state {state}"

    def _finish(self, outcome: str, exit_code: int, status: int | None, note: str | None) -> None:
        """Record the outcome; a failure to write it never changes the command's result."""
        try:
            self.write(outcome, exit_code, status, note)
        except (StorageError, OSError) as exc:
            what = f"entry #{self.entry}" if self.entry is not None else "a refusal"
            text = (f"could not record the outcome of {what} in the history ({exc}); it reads "
                    "unknown until `walletctl history --unknown --reconcile` looks it up")
            if self.warn is None:
                warnings.warn(text, RuntimeWarning, stacklevel=2)
            else:
                self.warn(text)

    def write(self, outcome: str, exit_code: int, status: int | None, note: str | None) -> None:
        """The entry completed with ``outcome`` (never begun: one entry complete at birth,
        when the movement was refused before anything was sent)."""
        if self.store is None:
            return
        writes: Writes = self.store if self.writes is None else self.writes
        if self.entry is None:
            if outcome != "refused":  # nothing sent and nothing refused: not an action
                return
            writes.begin(replace(self.intent, outcome=outcome, exit_code=exit_code, note=note))
            return
        writes.complete(self.entry, Completion(
            time=now_utc(), outcome=outcome, http_status=status, exit_code=exit_code,
            note=note))


@contextmanager
def recording(
    store: HistoryStore | None,
    profile: Profile,
    operation: str,
    original_ref: str | None,
    *,
    reason: str | None = None,
    batch_id: str | None = None,
    batch_row: int | None = None,
    warn: Callable[[str], None] | None = None,
) -> Iterator[Recording]:
    """``warn``: shows the operator a warning (an outcome the history could not write)."""
    rec = Recording(store, intent_for(profile, operation, original_ref=original_ref,
                                      reason=reason, batch_id=batch_id, batch_row=batch_row),
                    warn=warn)
    try:
        yield rec
    except BaseException as exc:
        if isinstance(exc, GatewayError):  # no gateway prose: it is not ours to store
            code = int(exc.exit_code)
            note = f"HTTP {exc.status}" + (f" code {exc.code}" if exc.code else "")
        elif isinstance(exc, WalletctlError):
            code = int(exc.exit_code)
            note = exc.message
        elif isinstance(exc, KeyboardInterrupt):
            code, note = int(ExitCode.INTERRUPTED), "interrupted"
        elif isinstance(exc, Exception):
            code, note = int(ExitCode.ERROR), f"internal error: {type(exc).__name__}"
        else:
            raise
        outcome = outcome_of_error(exc)
        if isinstance(exc, (DeclinedError, HeldError)) and rec.outcome is not None:
            outcome = rec.outcome
        note = "".join(c if c.isprintable() else "?" for c in note)[:300]
        rec._finish(outcome, code, getattr(exc, "status", None) or rec.http_status, note)
        raise
    else:
        if rec.entry is not None:
            outcome = rec.outcome or "approved"
            rec._finish(outcome, int(exit_of(outcome)), rec.http_status, rec.note)
    finally:
        if store is not None:
            store.close()
