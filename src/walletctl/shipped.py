"""Files walletctl ships beside its code: the shell completions, the sample profiles and the
man page. Their one copy lives at the top of the repository; the wheel carries them inside the
package (pyproject.toml's ``force-include``), so a checkout reads the repository's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

Folder = Literal["completions", "sample-configs", "man"]
PACKAGE: Final = Path(__file__).resolve().parent  # .../walletctl
CHECKOUT: Final = PACKAGE.parent.parent  # src/walletctl -> the repository (in a checkout)


def in_checkout() -> bool:
    """Whether this walletctl runs from a source checkout (src/walletctl beside pyproject)."""
    return PACKAGE.parent.name == "src" and (CHECKOUT / "pyproject.toml").is_file()


def folder(name: Folder) -> Path:
    """The directory holding the shipped ``name`` files: the installed package's copy, else
    the checkout's top-level folder (a broken installation: one error line, exit 1)."""
    inside = PACKAGE / name
    if inside.is_dir():
        return inside
    if in_checkout() and (CHECKOUT / name).is_dir():
        return CHECKOUT / name
    from walletctl.errors import WalletctlError

    raise WalletctlError(f"this installation of walletctl has no {name}/ ({inside})",
                         hint="reinstall walletctl from its wheel or sdist")


def read(name: Folder, filename: str) -> str:
    """The text of a shipped file, e.g. ``read("completions", "_walletctl")``."""
    return (folder(name) / filename).read_text(encoding="utf-8")
