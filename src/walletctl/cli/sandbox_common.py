"""What the ``walletctl sandbox`` commands that call a running sandbox share: its URL
(``--url``, else the selected profile's gateway; a production profile is refused) and one
call to its routes. Used by :mod:`walletctl.cli.sandbox_admin` and
:mod:`walletctl.cli.sandbox_3ds`.
"""

from __future__ import annotations

from typing import Any

import typer

from walletctl.cli.state import get_state

URL_HELP = "Sandbox base URL (default: the selected profile's base_url)."


def _is_http_url(url: str) -> bool:
    import re

    return len(url) <= 2048 and re.fullmatch(r"https?://[^\s/?#]+[^\s]*", url) is not None \
        and url.isprintable()


def base_url(ctx: typer.Context, url: str | None,
             command: str) -> tuple[str, dict[str, str]]:
    """The sandbox URL and, when a profile is used, its merchantId/storeId filter (a
    production profile is refused: these commands act on a sandbox only)."""
    if url is not None and not url.strip():  # `--url ""` must not fall back to the profile
        from walletctl.errors import UsageError

        raise UsageError("--url: must not be empty (omit it to use the profile's gateway)")
    if url is not None and not _is_http_url(url):
        from walletctl.errors import UsageError

        raise UsageError("--url: must be an http(s) URL such as http://127.0.0.1:8765")
    if url:
        return url.rstrip("/"), {}
    prof = get_state(ctx).profile()
    from walletctl.cli.production import refuse_production

    refuse_production(prof, command=f"sandbox {command}")
    return prof.base_url.rstrip("/"), {"merchantId": prof.merchant_id, "storeId": prof.store_id}


def call(method: str, url: str, *, params: dict[str, str] | None = None,
         json_body: Any = None, token: str | None = None) -> Any:
    """One call to a sandbox route (the JSON answer; a refusal raises with its message)."""
    from walletctl.ops.sandbox_admin import admin_call

    return admin_call(method, url, params=params, json_body=json_body, token=token)
