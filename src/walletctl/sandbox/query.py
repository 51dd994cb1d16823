"""The one reading of a GET route's query string, as strict as a JSON body.

* Parameter names are matched in any ASCII letter case (``merchantId``, ``MerchantId``); a
  name with non-ASCII characters never matches.
* A parameter given twice, the same or in two spellings (``merchantId=M-1&merchantId=M-2``,
  ``merchantId=..&MerchantId=..``) is a 400 naming it: no first-wins / last-wins.
* Values are percent-decoded to bytes, then read as UTF-8; an escape that is not UTF-8
  (``P%FF``) is a 400 naming the parameter, never a U+FFFD in the value.
* Parameters the route does not read are ignored (as the gateway does).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable

from walletctl.models.base import fold_key
from walletctl.sandbox.replies import SandboxError

__all__ = ["read_query"]


def _unquote(raw: bytes) -> bytes:
    return urllib.parse.unquote_to_bytes(raw.replace(b"+", b" "))


def read_query(query: bytes, names: Iterable[str],
               required: Iterable[str] = ()) -> dict[str, str]:
    """``{name: value}`` for the ``names`` given in ``query`` (the raw query string).

    Raises :class:`SandboxError` (400) for a parameter given twice, a value that is not
    UTF-8, and (all at once) the ``required`` ones that are missing or blank.
    """
    wanted = {name.lower(): name for name in names}
    found: dict[str, str] = {}
    for part in query.split(b"&"):
        if not part:
            continue
        raw_name, _, raw_value = part.partition(b"=")
        name = _unquote(raw_name).decode("utf-8", "replace")
        wire = wanted.get(fold_key(name))  # ASCII letters only: never the Kelvin sign
        if wire is None:
            continue  # a parameter the route does not read
        if wire in found:
            raise SandboxError(400, f"{wire}: is given more than once (query parameter; "
                               "names are read case-insensitively)")
        try:
            found[wire] = _unquote(raw_value).decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxError(400, f"{wire}: is not UTF-8 text (query parameter; "
                               "percent-escapes must encode UTF-8)") from None
    missing = [f"{name}: is required (query parameter)" for name in required
               if not found.get(name, "").strip()]
    if missing:
        raise SandboxError(400, "; ".join(missing))
    return found
