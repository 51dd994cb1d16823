"""``walletctl completion SHELL``, and the generator of every file derived from the command tree.

``walletctl completion bash|zsh|fish|powershell`` prints the shipped script (the convention of
gh, kubectl and poetry); the scripts are static, so TAB costs no Python start-up. Their one
copy is the repository's top-level ``completions/`` (the wheel carries it inside the package:
walletctl/shipped.py).

Regenerate after changing a command, option or argument (tests fail when they are stale)::

    python -m walletctl.cli.completions     # rewrites completions/* and man/walletctl.1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from walletctl.cli.completion_scripts import SHELLS

if TYPE_CHECKING:
    import typer as typer_t

__all__ = ["SHELLS", "main", "register", "render_all", "shipped_script"]


def render_all() -> dict[str, str]:
    """{file name in completions/: its text} as the command tree renders it now."""
    from walletctl.cli.command_tree import command_tree
    from walletctl.cli.completion_scripts import RENDERERS

    tree = command_tree()
    return {SHELLS[shell]: render(tree) for shell, render in RENDERERS.items()}


def shipped_script(shell: str) -> str:
    """The shipped script for ``shell`` (bash, zsh, fish, powershell)."""
    from walletctl import shipped

    return shipped.read("completions", SHELLS[shell])


_COMPLETION_HELP = "Print the shell completion script for bash, zsh, fish or powershell."


def register(app: typer_t.Typer) -> None:
    """``walletctl completion SHELL`` (loaded lazily like every command)."""
    import typer

    @app.command("completion", help=_COMPLETION_HELP + """

    \b
    bash, in ~/.bashrc:
        source <(walletctl completion bash)
    zsh, and in ~/.zshrc before compinit: fpath=(~/.zfunc $fpath)
        mkdir -p ~/.zfunc && walletctl completion zsh > ~/.zfunc/_walletctl
    fish:
        mkdir -p ~/.config/fish/completions
        walletctl completion fish > ~/.config/fish/completions/walletctl.fish
    PowerShell, in $PROFILE:
        walletctl completion powershell | Out-String | Invoke-Expression
    """)
    def completion(
        shell: str = typer.Argument(..., help="bash | zsh | fish | powershell."),
    ) -> None:
        from walletctl.errors import UsageError

        if shell not in SHELLS:
            raise UsageError(f"completion: unknown shell {shell!r}",
                             hint="one of: " + ", ".join(SHELLS))
        from walletctl.render.output import write_text

        write_text(shipped_script(shell))


def main(argv: list[str]) -> int:
    from walletctl import shipped
    from walletctl.cli import manpage

    parser = argparse.ArgumentParser(
        prog="python -m walletctl.cli.completions",
        description="Regenerate walletctl's shell completion scripts (completions/) and its "
                    "man page (man/walletctl.1) from the command tree.",
    )
    parser.add_argument("directory", nargs="?", type=Path, default=None,
                        help="write the completion scripts here instead (default: the "
                             "checkout's completions/, and its man/walletctl.1)")
    args = parser.parse_args(argv)
    if args.directory is None and not shipped.in_checkout():
        parser.error("not running from a source checkout: name a DIRECTORY")
    target: Path = args.directory or shipped.CHECKOUT / "completions"
    target.mkdir(parents=True, exist_ok=True)
    from walletctl.render.output import write_text

    for name, text in render_all().items():
        (target / name).write_text(text, encoding="utf-8")
        write_text(f"wrote {target / name}\n")
    if args.directory is None:
        write_text(f"wrote {manpage.write()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
