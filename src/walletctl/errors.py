"""The domain exception tree. Raised deep, turned into one stderr line + exit code in cli.main.

    WalletctlError                 exit_code
    ├── UsageError                 USAGE
    ├── ConfigError                CONFIG
    ├── RequestValidationError     VALIDATION   (nothing was sent)
    ├── RefusedError               DECLINED     (pre-flight: the gateway would refuse)
    │   ├── HeldError              HELD         (a likely duplicate / a busy original: not sent)
    │   └── AwaitingApprovalError  AWAITING_APPROVAL (filed for a second operator: not sent)
    ├── DeclinedError              DECLINED     (the gateway answered with a refusal state)
    ├── GatewayError               by status: 4xx DECLINED, 401/403 AUTH, 429/5xx GATEWAY
    │   └── AuthError              AUTH
    ├── ResponseError              GATEWAY      (the gateway answered something unparseable)
    │   └── RedirectError          GATEWAY      (a 3xx: the base_url is wrong; not followed)
    ├── NetworkError               NETWORK      (no answer to a read: safe to repeat)
    │   └── NotConnectedError      NETWORK      (connection never made: nothing sent)
    └── UnknownOutcomeError        UNKNOWN_OUTCOME (sent, no answer: look it up)
        └── ConflictError          UNKNOWN_OUTCOME (the gateway shows another transaction
                                                     under an intent's reference)

Messages never contain secrets: callers pass masked values only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletctl.constants import ExitCode


class WalletctlError(Exception):
    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        message, hint = _short(message), None if hint is None else _short(hint)
        super().__init__(message)
        self.message = message
        self.hint = hint


MAX_MESSAGE = 1000  # characters: an error is one readable line, whatever input caused it


def _short(text: str) -> str:
    """One line of at most MAX_MESSAGE characters (a 100k-character reference is cut)."""
    text = " ".join(text.splitlines())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 14] + "...(truncated)"


class UsageError(WalletctlError):
    exit_code = ExitCode.USAGE


def missing_options(command: str, missing: Sequence[tuple[str, str]], *,
                    hint: str | None = None) -> UsageError:
    """A required value given nowhere, in the voice of Click's own missing option (exit 2):
    ``checkout: missing option --amount (the amount in major units, e.g. --amount 12.34)``.

    ``missing`` holds (flag, or flags joined by ", "; why it is required) pairs.
    """
    what = "option" if len(missing) == 1 and "," not in missing[0][0] else "options"
    listed = "; ".join(f"{flag} ({rule})" for flag, rule in missing)
    return UsageError(f"{command}: missing {what} {listed}",
                      hint=hint or f"see `walletctl {command} --help`")


class ConfigError(WalletctlError):
    """A profile problem; ``location`` reads like ``profiles.prod -> auth -> key_env``."""

    exit_code = ExitCode.CONFIG

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None):
        super().__init__(f"{location}: {message}" if location else message, hint=hint)
        self.location = location


class RequestValidationError(WalletctlError):
    """One or more fields break a spec rule. ``problems`` is a list of (field path, rule)."""

    exit_code = ExitCode.VALIDATION

    def __init__(self, problems: list[tuple[str, str]], *, hint: str | None = None) -> None:
        self.problems = problems
        first = "; ".join(f"{field}: {rule}" for field, rule in problems[:3])
        rest = [field for field, _ in problems[3:]]
        more = f" (+{len(rest)} more: {', '.join(rest)})" if rest else ""
        super().__init__(f"invalid request: {first}{more}", hint=hint)


class RefusedError(WalletctlError):
    """walletctl's pre-flight check refused what the gateway would refuse."""

    exit_code = ExitCode.DECLINED


class DeclinedError(WalletctlError):
    """The gateway answered, and its answer is a refusal (e.g. state Declined/Errored)."""

    exit_code = ExitCode.DECLINED


class GatewayError(WalletctlError):
    """The gateway answered with an error status and (usually) its error object."""

    def __init__(self, status: int, *, code: str | None = None, description: str | None = None,
                 detail: str | None = None, hint: str | None = None, body: Any = None,
                 retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after  # seconds, from a 429/503 Retry-After header (capped)
        self.retry_after_asked: float | None = retry_after  # the same, before the cap
        self.code = code
        self.description = description
        self.detail = detail
        self.body = body
        parts = [f"gateway answered HTTP {status}"]
        if description:
            parts.append(description)
        if detail:
            parts.append(detail)
        if code and code != description:
            parts.append(f"(code {code})")
        super().__init__(": ".join(parts[:2]) + (" — " + " ".join(parts[2:]) if parts[2:] else ""),
                         hint=hint)

    @property
    def exit_code(self) -> ExitCode:  # type: ignore[override]
        if self.status in (401, 403):
            return ExitCode.AUTH
        if self.status >= 500 or self.status == 429:  # unavailable / rate limited: try later
            return ExitCode.GATEWAY
        return ExitCode.DECLINED


class AuthError(GatewayError):
    pass


class ResponseError(WalletctlError):
    """The gateway's answer did not match the spec (bad JSON, wrong shape)."""

    exit_code = ExitCode.GATEWAY


class RedirectError(ResponseError):
    """The gateway answered a redirect (3xx). walletctl follows none: the profile's base_url
    is wrong (http for https, a missing path prefix), for every request alike."""


class NetworkError(WalletctlError):
    """No answer: either no connection could be made (:class:`NotConnectedError`, nothing
    reached the gateway) or a read got none (safe to repeat)."""

    exit_code = ExitCode.NETWORK


class NotConnectedError(NetworkError):
    """No connection could be made (refused, DNS, TLS, connect timeout): nothing was sent."""


class UnknownOutcomeError(WalletctlError):
    """A money-moving request was sent but no answer came back (timeout, dropped connection)."""

    exit_code = ExitCode.UNKNOWN_OUTCOME

    def __init__(self, reference: str, cause: str) -> None:
        super().__init__(
            f"unknown outcome for {reference} ({cause}) — it may or may not have been applied",
            hint=f"check with `walletctl lookup {reference}` before trying again",
        )
        self.reference = reference


class ConflictError(UnknownOutcomeError):
    """An earlier intent's reference is at the gateway, but as another transaction (type,
    amount or currency differ): neither is trusted, nothing is sent."""

    def __init__(self, message: str, *, reference: str, hint: str | None = None) -> None:
        WalletctlError.__init__(self, message, hint=hint)
        self.reference = reference


class HeldError(RefusedError):
    """Held back before sending: a likely duplicate of a recent movement (``--allow-duplicate``
    sends it anyway), or another process kept the original busy for too long. Recorded in
    the history as ``refused`` (nothing was sent)."""

    exit_code = ExitCode.HELD


class AwaitingApprovalError(RefusedError):
    """Above the profile's approval amount: an approval request was filed (``approval``, its
    id) and nothing was sent. Recorded in the history as ``refused`` with that id."""

    exit_code = ExitCode.AWAITING_APPROVAL

    def __init__(self, message: str, *, approval: Any, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.approval = approval
