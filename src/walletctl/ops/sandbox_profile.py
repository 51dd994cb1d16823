"""A ready profile for a running sandbox: ``sandbox serve --write-profile NAME | --print-profile``.

The profile carries everything every command needs against that sandbox: its URL, the
merchant ids, its amount format, redirect defaults for checkout, the API key and the public
key service secret. The sandbox's default credentials are documented test values
(``walletctl sandbox values``), so they are written inline (the file is 0600); a custom
``--api-key`` is referenced through ``$WALLETCTL_SANDBOX_API_KEY`` when it came from there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from walletctl.constants import Env
from walletctl.errors import UsageError

MERCHANT_ID = "M-1001"
STORE_ID = "S-01"
USER_ID = "ops-bot"
REDIRECTS = {
    "success_url": "https://shop.example/ok",
    "error_url": "https://shop.example/error",
    "pending_url": "https://shop.example/pending",
    "return_url": "https://shop.example/cart",
}


def profile_table(url: str, *, amount_format: str, api_key: str, service_secret: str,
                  default_key: str) -> dict[str, Any]:
    auth: dict[str, Any] = {"scheme": "PublicApiKey"}
    if api_key != default_key and os.environ.get(Env.SANDBOX_API_KEY) == api_key:
        auth["key_env"] = Env.SANDBOX_API_KEY
    else:
        auth["key"] = api_key
    auth["service_secret"] = service_secret
    return {
        "base_url": url,
        "merchant_id": MERCHANT_ID,
        "store_id": STORE_ID,
        "user_id": USER_ID,
        "amount_format": amount_format,
        "currency": "EUR",
        "environment": "test",  # a sandbox's: never production
        "auth": auth,
        "redirects": dict(REDIRECTS),
    }


def profile_text(name: str, table: dict[str, Any]) -> str:
    """The profile as a TOML profiles file of its own (what --print-profile prints)."""
    import tomlkit

    from walletctl.config.profiles_file import toml_table

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"walletctl profile for the sandbox at {table['base_url']}"))
    doc.add(tomlkit.comment("(written by `walletctl sandbox serve --print-profile`; keep it "
                            "chmod 600: it holds the sandbox's test credentials)"))
    doc.add("default_profile", name)
    profiles = tomlkit.table(is_super_table=True)
    profiles.add(name, toml_table(table))
    doc.add("profiles", profiles)
    return tomlkit.dumps(doc)


def _is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def write_profile(config: Path | None, name: str, table: dict[str, Any]) -> Path:
    """Add (or update a sandbox's) profile ``name`` in the selected profiles file."""
    from walletctl.config.profiles_file import add_profile, config_path, load_file

    path = config_path(config)
    replace = False
    if path.exists():
        existing = load_file(path).profiles.get(name)
        if existing is not None:
            why = ("is a production profile; a sandbox never replaces it"
                   if existing.is_production else None if _is_loopback_url(existing.base_url)
                   else f"points to {existing.base_url}, not a local sandbox")
            if why is not None:
                raise UsageError(
                    f"--write-profile {name}: profile {name!r} exists and {why}",
                    hint="pick another name (the sandbox's profile is replaced on each start)")
            replace = True
    add_profile(path, name, table, replace=replace)
    return path
