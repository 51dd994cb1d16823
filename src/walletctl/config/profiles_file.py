"""The profiles file as a whole: reading it, picking a profile, writing it whole.

Which profile is used (first that applies)::

    --profile/-p NAME  >  $WALLETCTL_PROFILE  >  default_profile in the file  >  the only profile

Where the file is: :mod:`walletctl.config.location`; the rules a document must pass:
:mod:`walletctl.config.validate`; the permission rule and atomic 0600 writing:
:mod:`walletctl.config.private`; editing in place with comments kept: :mod:`walletctl.config.edit`.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from walletctl.config.edit import HEADER
from walletctl.config.location import config_path as _resolve_path
from walletctl.config.private import check_private, write_private
from walletctl.config.profile import Profile, ProfilesFile
from walletctl.config.validate import parse_document
from walletctl.constants import Env
from walletctl.errors import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "load_file", "load_profile", "save_file", "select_profile"]

_ADD_HINT = (
    "create one with `walletctl profile add NAME --base-url URL --merchant-id ID "
    "--store-id ID --user-id USER`"
)

MAX_CONFIG_BYTES = 1024 * 1024


def load_file(path: Path, *, check_permissions: bool = True) -> ProfilesFile:
    """Read and validate one profiles file.

    Raises ConfigError when the file is missing or unreadable, is not TOML, breaks a rule
    (with the key's location), or holds an inline secret while group/world accessible
    (unless ``check_permissions`` is False: ``profile check`` reports that separately).
    """
    path = Path(path).expanduser()
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; anything but a regular file
        # (FIFO, /dev/zero, a socket) is refused before a byte is read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError
                raise ConfigError(f"{path} is not a regular file (a FIFO or device?)")
            data = fh.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    except FileNotFoundError:
        raise ConfigError(f"no profiles file at {path}", hint=_ADD_HINT) from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a profiles file") from None
    except PermissionError:
        raise ConfigError(
            f"cannot read {path}: permission denied", hint=f"check the owner of {path}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}",
            hint="`walletctl profile example` prints a commented profiles file",
        ) from None
    default, profiles = parse_document(document, path)
    mode = None if os.name == "nt" else stat.S_IMODE(st.st_mode)
    result = ProfilesFile(
        path=path, default_profile=default, profiles=profiles, document=document, mode=mode
    )
    if check_permissions and result.holds_inline_secret:
        check_private(path, mode)
    return result


def select_profile(pf: ProfilesFile, name: str | None) -> Profile:
    """Pick a profile: ``name`` > $WALLETCTL_PROFILE > default_profile > the only profile."""
    chosen = name or os.environ.get(Env.PROFILE) or pf.default_profile
    available = ", ".join(key + (" (production)" if p.is_production else "")
                          for key, p in pf.profiles.items()) or "none"
    if chosen is None:
        if len(pf.profiles) == 1:
            return next(iter(pf.profiles.values()))
        if not pf.profiles:
            raise ConfigError(f"no profiles in {pf.path}", hint=_ADD_HINT)
        raise ConfigError(
            f"no profile selected and {pf.path} has {len(pf.profiles)} ({available})",
            hint="pass --profile NAME, set WALLETCTL_PROFILE, or set default_profile in the file",
        )
    if chosen not in pf.profiles:
        raise ConfigError(
            f"unknown profile {chosen!r} in {pf.path}; available: {available}",
            hint="see `walletctl profile list`",
        )
    return pf.profiles[chosen]


def load_profile(name: str | None = None, config_path: Path | None = None) -> Profile:
    """Load the selected profile from the selected file (see the module docstring)."""
    return select_profile(load_file(_resolve_path(config_path)), name)


def save_file(path: Path, document: dict[str, Any]) -> ProfilesFile:
    """Validate ``document`` and write it to ``path`` with tomli-w (atomic, 0600).

    The document is checked with the same rules as :func:`load_file` first, so walletctl never
    writes a file it would refuse to read. Returns the saved file, parsed.
    """
    import tomli_w

    path = Path(path).expanduser()
    default, profiles = parse_document(document, path)
    data = (HEADER + tomli_w.dumps(document)).encode("utf-8")
    write_private(path, data)
    return ProfilesFile(
        path=path,
        default_profile=default,
        profiles=profiles,
        document=document,
        mode=None if os.name == "nt" else 0o600,
    )
