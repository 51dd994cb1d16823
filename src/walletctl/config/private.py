"""Private files: the permission rule for files holding a secret, and atomic 0600 writing.

Permissions follow ssh: a profiles file that holds an inline secret (``auth.key``) must not be
readable or writable by group or others (``chmod 600``); the same holds for a ``key_file``
(checked by ``config.secrets``). Files written by walletctl are created 0600 in a 0700 directory,
through a temporary file and an atomic rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from walletctl.errors import ConfigError

__all__ = ["check_private", "ensure_dir", "file_mode", "write_private"]


def file_mode(path: Path) -> int | None:
    """Permission bits of ``path`` (e.g. ``0o600``), or None where POSIX modes do not apply."""
    if os.name == "nt":
        return None
    return stat.S_IMODE(path.stat().st_mode)


def _too_open(mode: int | None) -> bool:
    return mode is not None and bool(mode & 0o077)


def check_private(path: Path, mode: int | None = None, *, location: str | None = None) -> None:
    """Refuse a file holding a secret that group or others may read or write (as ssh does)."""
    if mode is None:
        mode = file_mode(path)
    if _too_open(mode):
        import shlex

        assert mode is not None
        raise ConfigError(
            f"permissions {mode:04o} for '{path}' are too open; it holds a secret",
            location=location,
            hint=f"chmod 600 {shlex.quote(str(path))}",
        )


def ensure_dir(directory: Path) -> None:
    if not directory.exists():
        # Every directory created here is 0700, parents included (mkdir(parents=True) would
        # create them with the umask's 0755).
        missing = [directory, *(p for p in directory.parents if not p.exists())]
        for new in reversed(missing):
            new.mkdir(mode=0o700, exist_ok=True)
            if os.name != "nt":
                os.chmod(new, 0o700)  # mkdir's mode is masked by the umask


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file + rename), mode 0600, dir 0700 if new."""
    import tempfile

    path = Path(path)
    if path.is_symlink():
        # Write the link's target: replacing the link itself would break dotfile managers.
        path = path.resolve()
    ensure_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        if os.name != "nt":
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if os.name != "nt":  # make the rename durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
