"""walletctl's command tree, read from the click commands themselves.

The shell completions (cli/completion_scripts.py) and the man page (cli/manpage.py) are
generated from it, so a new command, option or argument appears in both when they are
regenerated (``python -m walletctl.cli.completions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

PROFILES: Final = "@profiles"  # value marker: profile names from the profiles file
FILES: Final = "@files"  # value marker: file names
# Values of options that are plain strings checked in code (not click.Choice).
KNOWN_VALUES: Final = {
    "--output": "table json ndjson csv",
    "-o": "table json ndjson csv",
    "--type": "sale preauth",
    "--amount-format": "minor decimal",
    "--auth-scheme": "PublicApiKey Bearer Basic header none",
    "--environment": "production test",
    "--confirm-profile": PROFILES,
    "--profile": PROFILES,
    "-p": PROFILES,
}
# Values offered for a command's argument: "path" -> words, or a marker.
ARGUMENT_VALUES: Final = {
    "completion": "bash zsh fish powershell",
    "profile example": "reference sandbox production-key-env key-file keyring",
    "profile show": PROFILES,
    "profile remove": PROFILES,
    "profile check": PROFILES,
}


@dataclass(frozen=True)
class Option:
    opts: tuple[str, ...]  # every spelling: ("--output", "-o"), ("--color", "--no-color")
    help: str  # the first sentence
    takes_value: bool
    values: str = ""  # "" (free text), PROFILES, FILES, or space-separated words
    multiple: bool = False  # may be repeated
    metavar: str = ""  # what the man page shows after the option: "TEXT", "PATH"
    full_help: str = ""  # the whole help text (man page)


@dataclass(frozen=True)
class Argument:
    name: str
    values: str = ""  # as Option.values
    many: bool = False
    required: bool = False


@dataclass
class Node:
    """One command (path "" is walletctl itself, "profile add" a subcommand)."""

    path: str
    children: list[tuple[str, str]] = field(default_factory=list)  # (name, one-line help)
    options: list[Option] = field(default_factory=list)
    arguments: list[Argument] = field(default_factory=list)
    command: Any = None  # the click command: its full help, usage line and epilog

    @property
    def takes(self) -> dict[str, str]:
        """Every option spelling that takes a value -> its values."""
        return {o: opt.values for opt in self.options if opt.takes_value for o in opt.opts}


def first_sentence(text: str | None, width: int = 60) -> str:
    text = " ".join((text or "").split())
    sentence = text.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= width else sentence[: width - 3].rstrip() + "..."


def _values(param: Any) -> str:
    import click

    if isinstance(param.type, click.Choice):
        return " ".join(str(c) for c in param.type.choices)
    for opt in param.opts:
        if opt in KNOWN_VALUES:
            return KNOWN_VALUES[opt]
    if isinstance(param.type, click.Path | click.File):
        return FILES
    return ""


def _option(param: Any, ctx: Any) -> Option:
    takes = not param.is_flag and not param.count
    metavar = ""
    if takes:
        metavar = param.make_metavar(ctx) if _metavar_takes_ctx(param) else param.make_metavar()
    return Option(
        opts=(*param.opts, *param.secondary_opts),
        help=first_sentence(getattr(param, "help", None)),
        takes_value=takes,
        values=_values(param) if takes else "",
        multiple=bool(param.multiple or param.count),
        metavar=metavar,
        full_help=" ".join((getattr(param, "help", None) or "").split()),
    )


def _metavar_takes_ctx(param: Any) -> bool:
    import inspect

    return "ctx" in inspect.signature(param.make_metavar).parameters


def command_tree() -> dict[str, Node]:
    """{"": walletctl, "profile": ..., "profile add": ...}, sorted by path."""
    import click
    import typer

    from walletctl.cli.main import app

    root = typer.main.get_command(app)
    root_ctx = click.Context(root, info_name="walletctl")
    tree: dict[str, Node] = {}

    def walk(cmd: Any, path: str, ctx: Any) -> None:
        node = Node(path=path, command=cmd)
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            if param.param_type_name == "option":
                node.options.append(_option(param, ctx))
            elif param.param_type_name == "argument":
                node.arguments.append(Argument(
                    name=param.name or "arg", values=ARGUMENT_VALUES.get(path, ""),
                    many=param.nargs == -1, required=bool(param.required)))
        node.options.append(Option(opts=("--help", "-h"), help="Show help", takes_value=False,
                                   full_help="Show the help and exit."))
        names = cmd.list_commands(ctx) if hasattr(cmd, "list_commands") else []
        for name in sorted(names):
            sub = cmd.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            node.children.append((name, first_sentence(sub.help)))
            walk(sub, f"{path} {name}".strip(), click.Context(sub, info_name=name, parent=ctx))
        tree[path] = node

    walk(root, "", root_ctx)
    return dict(sorted(tree.items()))
