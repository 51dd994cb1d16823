"""``walletctl --version``: what a bug report needs, read without importing the libraries.

Versions come from the installed distributions' metadata (importlib.metadata), so
``--version`` stays as cheap as ``--help`` (tests/core/test_import_cost.py).
"""

from __future__ import annotations

# The libraries walletctl's behaviour depends on most (psycopg only with [postgres]).
LIBRARIES = ("typer", "click", "rich", "httpx", "pydantic", "fastapi", "uvicorn", "psycopg")


def library_versions() -> list[tuple[str, str | None]]:
    """(distribution, version or None when not installed), in LIBRARIES order."""
    from importlib.metadata import PackageNotFoundError, version

    found: list[tuple[str, str | None]] = []
    for name in LIBRARIES:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            found.append((name, None))
    return found


def version_text() -> str:
    import platform

    from walletctl import __version__

    items = [f"{name} {found or 'not installed'}" for name, found in library_versions()]
    lines = [f"walletctl {__version__}",
             f"Python {platform.python_version()} ({platform.python_implementation()})"
             f" on {platform.platform()}"]
    line = "libraries:"
    for i, item in enumerate(items):  # wrapped at 79 columns, never inside "name version"
        item += "," if i < len(items) - 1 else ""
        if len(line) + 1 + len(item) > 79:
            lines.append(line)
            line = " "
        line += " " + item
    return "\n".join([*lines, line]) + "\n"
