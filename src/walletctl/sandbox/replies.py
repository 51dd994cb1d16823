"""The gateway error object ``{code, description, details: {message}}`` every sandbox error is
(:func:`error_body`), and :class:`SandboxError`, which carries one up to its route.
"""

from __future__ import annotations

import re
from typing import Any, Final

from walletctl.errors import RequestValidationError


class SandboxError(Exception):
    def __init__(self, status: int, message: str, *, code: str | None = None,
                 description: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.description = description

    @property
    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, code=self.code,
                          description=self.description)


def invalid_body(exc: RequestValidationError) -> SandboxError:
    """The 400 for a body its route's model refused: the first five fields and rules."""
    return SandboxError(400, "; ".join(f"{field}: {rule}" for field, rule in exc.problems[:5]))


_ERRORS: Final[dict[int, tuple[str, str]]] = {
    400: ("GEN-400", "GeneralValidationError"),
    401: ("AUTH-401", "AuthenticationError"),
    403: ("AUTH-403", "AuthorizationError"),
    404: ("TRX-404", "TransactionNotFound"),
    405: ("GEN-405", "MethodNotAllowed"),
    409: ("TRX-409", "DuplicateTransaction"),
    410: ("TRX-410", "LinkNotUsable"),
    413: ("GEN-413", "PayloadTooLarge"),
    415: ("GEN-415", "UnsupportedMediaType"),
    422: ("TRX-422", "BusinessRuleViolation"),
    429: ("GEN-429", "TooManyRequests"),
    431: ("GEN-431", "RequestHeaderFieldsTooLarge"),
    500: ("GEN-500", "InternalError"),
    502: ("GEN-502", "BadGateway"),
    503: ("GEN-503", "ServiceUnavailable"),
    504: ("GEN-504", "GatewayTimeout"),
}


QUOTE_MAX: Final = 48  # characters of a long rejected value an error message repeats
MESSAGE_MAX: Final = 1000  # characters of an error message at most
_LONG_WORD: Final = re.compile(r"\S{" + str(2 * QUOTE_MAX + 1) + ",}")


def _clip(match: re.Match[str]) -> str:
    word = match.group(0)
    return f"{word[:QUOTE_MAX]}… ({len(word)} characters)"


def clipped(message: str) -> str:
    """``message`` with each run of more than twice :data:`QUOTE_MAX` non-space characters (a
    rejected value, key or reference echoed) cut to its first :data:`QUOTE_MAX` and its
    length, and at most :data:`MESSAGE_MAX` characters in all: an error never repeats a
    large value back."""
    if len(message) > 2 * QUOTE_MAX:
        message = _LONG_WORD.sub(_clip, message)
    if len(message) > MESSAGE_MAX:
        message = message[:MESSAGE_MAX - 1] + "…"
    return message


def error_body(
    status: int, message: str, *, code: str | None = None, description: str | None = None
) -> dict[str, Any]:
    default_code, default_desc = _ERRORS.get(status, (f"GEN-{status}", "Error"))
    return {
        "code": code or default_code,
        "description": description or default_desc,
        "details": {"message": clipped(message)},
    }
