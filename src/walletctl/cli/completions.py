"""Every file derived from the command tree, and ``walletctl completion SHELL``.

The static shell completion scripts (``completions/``) and the man page
(``man/walletctl.1``, with the README's exit codes and docs/guide.md's environment table) are
rendered from the click commands themselves by ``python -m walletctl.cli.completions`` (tests
fail while they are stale). ``walletctl completion SHELL`` prints the shipped script.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from walletctl.cli.profile import EXAMPLES
from walletctl.cli.registry import COMMANDS
from walletctl.render import formats

if TYPE_CHECKING:
    import typer as typer_t

# --------------------------------------------------------------------------- the command tree

PROFILES: Final = "@profiles"  # value marker: profile names from the profiles file
FILES: Final = "@files"  # value marker: file names
# Values of options that are plain strings checked in code (not click.Choice).
KNOWN_VALUES: Final = {
    "--output": " ".join(formats.names()),
    "-o": " ".join(formats.names()),
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
    "profile example": " ".join(EXAMPLES),
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


@dataclass
class Node:
    """One command (path "" is walletctl itself, "profile add" a subcommand)."""

    path: str
    children: list[tuple[str, str]] = field(default_factory=list)  # (name, one-line help)
    options: list[Option] = field(default_factory=list)
    arguments: list[Argument] = field(default_factory=list)
    command: Any = None  # the click command: its full help, usage line and epilog

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.children]

    @property
    def spellings(self) -> list[str]:
        return [o for opt in self.options for o in opt.opts]

    @property
    def takes(self) -> dict[str, str]:  # each spelling of an option taking a value -> values
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
    if takes:  # click 8.2 passes the context
        import inspect

        make = param.make_metavar
        metavar = make(ctx) if "ctx" in inspect.signature(make).parameters else make()
    return Option(
        opts=(*param.opts, *param.secondary_opts),
        help=first_sentence(getattr(param, "help", None)),
        takes_value=takes,
        values=_values(param) if takes else "",
        multiple=bool(param.multiple or param.count),
        metavar=metavar,
        full_help=" ".join((getattr(param, "help", None) or "").split()),
    )


def command_tree() -> dict[str, Node]:
    """{"": walletctl, "profile": ..., "profile add": ...}, sorted by path."""
    import click

    from walletctl.cli.main import app

    root = app
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
                    many=param.nargs == -1))
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


# --------------------------------------------------------------------------- the scripts

HEADER = (
    "walletctl {} completion. Generated by `python -m walletctl.cli.completions`; do not edit."
)
SHELLS = {
    "bash": "walletctl.bash",
    "zsh": "_walletctl",
    "fish": "walletctl.fish",
    "powershell": "walletctl.ps1",
}
Tree = dict[str, Node]


def _zsh_q(text: str) -> str:
    """Text for inside a zsh single-quoted word (and _arguments' [description] brackets):
    a quote closes the word, adds an escaped quote and reopens it (``'\\''``)."""
    text = text.replace("[", "(").replace("]", ")").replace("\\", "/")
    return text.replace("'", "'\\''")


def _fish_q(text: str) -> str:
    """Text for inside a fish single-quoted word: fish escapes ``\\`` and ``'`` there."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _arg_values(node: Node) -> str:
    return next((a.values for a in node.arguments if a.values), "")


def _root_options_for(tree: Tree, node: Node) -> list[Option]:
    """Global options walletctl also accepts after a command (see hoist_global_options),
    unless the command spells one of them itself."""
    if not node.path:
        return []
    return [opt for opt in tree[""].options
            if opt.opts[0] != "--help" and not set(node.spellings).intersection(opt.opts)]


# How a shell offers a value: profile names, file names, the words, free text (nothing).
OFFERS = {
    "zsh": ("_walletctl_profiles", "_files", "({})", " "),
    "fish": (" -x -a '(__walletctl_profiles)'", " -r -F", " -x -a '{}'", " -x"),
}


def _offer(shell: str, values: str) -> str:
    profiles, files, words, free = OFFERS[shell]
    if values in (PROFILES, FILES):
        return profiles if values == PROFILES else files
    return words.format(values) if values else free


# --------------------------------------------------------------------------- bash


# after the tables: profile names, the reply, and the completion function itself
BASH_FUNCTIONS = r"""_walletctl_profiles() {
    local f="${WALLETCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/walletctl/profiles.toml}"
    [ -r "$f" ] && sed -n 's/^[[:space:]]*\[profiles\.\([A-Za-z0-9_-]*\)\].*/\1/p' "$f"
}
_walletctl_reply() {  # WORDS | @profiles | @files | '' (free text: nothing offered)
    case "$1" in
        @profiles) COMPREPLY=( $(compgen -W "$(_walletctl_profiles)" -- "$cur") ) ;;
        @files) compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ) ;;
        "") COMPREPLY=() ;;
        *) COMPREPLY=( $(compgen -W "$1" -- "$cur") ) ;;
    esac
}
_walletctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" w skip="" i takes values
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if [ -n "$skip" ]; then skip=""; continue; fi
        case "$w" in
            -*=*) continue ;;
            -*) [[ " $(_walletctl_takes "$path") $(_walletctl_takes '') " == *" $w "* ]] && skip=1; continue ;;
        esac
        if [[ " $(_walletctl_groups "$path") " == *" $w "* ]]; then
            path="${path:+$path }$w"
        fi
    done
    [ "$COMP_CWORD" -gt 1 ] && prev="${COMP_WORDS[COMP_CWORD-1]}"
    takes=" $(_walletctl_takes "$path") $(_walletctl_takes '') "
    if [[ "$prev" == -* && "$takes" == *" $prev "* ]]; then
        values="$(_walletctl_values "$path" "$prev")"
        [ -z "$values" ] && values="$(_walletctl_values '' "$prev")"
        _walletctl_reply "$values"
        return
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "$(_walletctl_options "$path")" -- "$cur") )
    elif [ -n "$(_walletctl_groups "$path")" ]; then
        COMPREPLY=( $(compgen -W "$(_walletctl_groups "$path")" -- "$cur") )
    else
        _walletctl_reply "$(_walletctl_args "$path")"
    fi
}
complete -F _walletctl walletctl
"""  # noqa: E501


def bash(tree: Tree) -> str:
    def case(name: str, rows: list[tuple[str, str]], doc: str, key: str = "$1") -> list[str]:
        out = [f"{name}() {{  # {doc}", f'    case "{key}" in']
        out += [f"        '{key}') echo '{value}' ;;" for key, value in rows if value]
        return [*out, "    esac", "}"]

    lines = [f"# {HEADER.format('bash')}",
             "# Install: echo 'source <(walletctl completion bash)' >> ~/.bashrc"]
    lines += case("_walletctl_groups", [(p, " ".join(n.names)) for p, n in tree.items()],
                  "PATH: its subcommands")
    lines += case("_walletctl_options", [(p, " ".join(n.spellings)) for p, n in tree.items()],
                  "PATH: its options")
    lines += case("_walletctl_takes", [(p, " ".join(n.takes)) for p, n in tree.items()],
                  "PATH: its options that take a value")
    lines += case("_walletctl_values", [(f"{p}|{o}", v) for p, n in tree.items()
                                        for o, v in n.takes.items()],
                  "PATH OPTION: the option's values", key="$1|$2")
    lines += case("_walletctl_args", [(p, _arg_values(n)) for p, n in tree.items()],
                  "PATH: the values of its argument")
    return "\n".join([*lines, BASH_FUNCTIONS])


# --------------------------------------------------------------------------- zsh


def _zsh_specs(options: list[Option]) -> list[str]:
    specs: list[str] = []
    for opt in options:
        if opt.opts[0] == "--help":
            specs += ["'(- *)'{-h,--help}'[Show help]'"]
            continue
        exclusive = "" if opt.multiple else "(" + " ".join(opt.opts) + ")"
        repeat = "*" if opt.multiple else ""
        message = opt.opts[0].lstrip("-").replace("-", " ")
        for name in opt.opts:
            spec = f"{repeat}{exclusive}{name}"
            if opt.takes_value:  # --long=: "--long=VALUE" or "--long VALUE"; -s+: "-sV", "-s V"
                spec += "=" if name.startswith("--") else "+"
            spec += f"[{_zsh_q(opt.help)}]"
            if opt.takes_value:
                spec += f":{message}:" + _offer("zsh", opt.values)
            specs.append(f"'{spec}'")
    return specs


def _zsh_function(path: str) -> str:
    return "_walletctl" + "".join("__" + word.replace("-", "_") for word in path.split())


ZSH_PROFILES = r"""_walletctl_profiles() {
    local f=${opt_args[--config]:-${WALLETCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/walletctl/profiles.toml}} line
    local -a names
    f=${~f}
    if [[ -r $f ]]; then
        for line in ${(f)"$(<$f)"}; do
            [[ $line =~ '^[[:space:]]*\[profiles\.([A-Za-z0-9_-]+)\]' ]] && names+=(${match[1]})
        done
    fi
    _describe -t profiles 'profile' names
}"""  # noqa: E501
ZSH_REGISTER = r"""# Autoloaded from $fpath (the #compdef line): complete now. Sourced: register.
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _walletctl "$@"
else
    compdef _walletctl walletctl
fi
"""


def zsh(tree: Tree) -> str:
    lines = ["#compdef walletctl", f"# {HEADER.format('zsh')}",
             "# Install: mkdir -p ~/.zfunc && walletctl completion zsh > ~/.zfunc/_walletctl,"
             " and in", "# ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath)", "", ZSH_PROFILES]
    for path, node in tree.items():
        options = _zsh_specs([*node.options, *_root_options_for(tree, node)])
        lines += ["", f"{_zsh_function(path)}() {{"]
        if node.children:
            lines += ['    local curcontext="$curcontext" state state_descr line ret=1',
                      "    typeset -A opt_args"]
        lines.append("    _arguments -s -S" + (" -C" if node.children else "") + " \\")
        for spec in options:
            lines.append(f"        {spec} \\")
        if node.children:
            lines += ["        '(-): :->command' \\", "        '(-)*:: :->args' && ret=0",
                      "    case $state in", "        command)", "            local -a commands=("]
            lines += [f"                '{name}:{_zsh_q(desc)}'" for name, desc in node.children]
            title = f"walletctl {path} command".replace("  ", " ")
            lines += ["            )",
                      f"            _describe -t commands '{title}' commands && ret=0 ;;",
                      "        args)",
                      '            curcontext="${curcontext%:*:*}:walletctl-$words[1]:"',
                      "            case $words[1] in"]
            for name, _ in node.children:
                sub = f"{path} {name}".strip()
                lines.append(f"                {name}) {_zsh_function(sub)} && ret=0 ;;")
            lines += ["            esac ;;", "    esac", "    return ret", "}"]
            continue
        args = []
        for a in node.arguments:
            message = a.name.replace("_", " ")
            action = f":{message}:" + _offer("zsh", a.values)
            if not a.values:  # free text: the message, unless an option is being typed
                action = f':{message}:_guard "^-*" "{message}"'
            args.append("'" + ("*" if a.many else "") + action + "'")
        lines += [f"        {spec} \\" for spec in args]
        lines[-1] = lines[-1].removesuffix(" \\")
        lines.append("}")
    return "\n".join([*lines, "", ZSH_REGISTER])


# --------------------------------------------------------------------------- fish


# the command path typed so far, at a path or one of several, and the profiles' names
FISH_FUNCTIONS = r"""function __walletctl_path  # the command path typed so far, option values skipped
    set -l path ''
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1; set skip 0; continue; end
        switch $w
            case '-*=*'; continue
            case '-*'
                if contains -- $w (string split ' ' -- (__walletctl_takes $path)) (string split ' ' -- (__walletctl_takes ''))
                    set skip 1
                end
                continue
        end
        if contains -- $w (string split ' ' -- (__walletctl_groups $path))
            set path (string trim -- "$path $w")
        end
    end
    echo $path
end
function __walletctl_at
    test "$(__walletctl_path)" = "$argv[1]"
end
function __walletctl_at_any
    contains -- "$(__walletctl_path)" $argv
end
function __walletctl_profiles
    set -l f $WALLETCTL_CONFIG
    if test -z "$f"
        set -l base $XDG_CONFIG_HOME
        test -z "$base"; and set base $HOME/.config
        set f $base/walletctl/profiles.toml
    end
    test -r $f; and string replace -rf '^\s*\[profiles\.([A-Za-z0-9_-]+)\].*' '$1' < $f
end"""  # noqa: E501


def fish(tree: Tree) -> str:
    def switch(name: str, rows: list[tuple[str, str]]) -> list[str]:
        cases = [f"        case '{path}'; echo {words}" for path, words in rows if words]
        return [f"function {name}", "    switch $argv[1]", *cases, "    end", "end"]

    lines = [f"# {HEADER.format('fish')}",
             "# Install: mkdir -p ~/.config/fish/completions && walletctl completion fish >"
             " ~/.config/fish/completions/walletctl.fish",
             "complete -c walletctl -f",
             *switch("__walletctl_groups", [(p, " ".join(n.names)) for p, n in tree.items()]),
             *switch("__walletctl_takes", [(p, " ".join(n.takes)) for p, n in tree.items()]),
             FISH_FUNCTIONS]
    for path, node in tree.items():
        lines += _fish_node(tree, path, node)
    lines.append("")
    return "\n".join(lines)


def _fish_condition(tree: Tree, path: str, node: Node) -> str:
    """Where a path's completions apply: at that path; the global options (path '') after
    any command that does not spell them itself."""
    if path:
        return f"-n \"__walletctl_at '{path}'\""
    spelled = {o for opt in node.options if opt.opts[0] != "--help" for o in opt.opts}
    owners = [p for p, n in tree.items()
              if p and spelled.intersection(n.spellings)]
    return "-n \"not __walletctl_at_any " + " ".join(f"'{p}'" for p in owners) + '"'


def _fish_node(tree: Tree, path: str, node: Node) -> list[str]:
    """The ``complete`` lines of one command path: its subcommands, arguments, options."""
    cond = _fish_condition(tree, path, node)
    lines = [f"complete -c walletctl -n \"__walletctl_at '{path}'\" -a {child}"
             f" -d '{_fish_q(desc)}'" for child, desc in node.children]
    values = _arg_values(node)
    if values == PROFILES:
        lines.append(f"complete -c walletctl {cond} -a '(__walletctl_profiles)'")
    elif values:
        lines.append(f"complete -c walletctl {cond} -a '{values}'")
    for opt in node.options:
        flags = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}"
                         for o in opt.opts)
        extra = _offer("fish", opt.values) if opt.takes_value else ""
        lines.append(f"complete -c walletctl {cond} {flags}{extra} -d '{_fish_q(opt.help)}'")
    return lines


# --------------------------------------------------------------------------- PowerShell


# finds the path typed so far and offers its words, or the values of the option before
PS_COMPLETER = r"""Register-ArgumentCompleter -Native -CommandName walletctl -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $path = ''; $skip = $false; $prev = ''
    foreach ($el in $commandAst.CommandElements | Select-Object -Skip 1) {
        $w = $el.ToString()
        if ($w -eq $wordToComplete -and $el.Extent.EndOffset -ge $cursorPosition) { break }
        $prev = $w
        if ($skip) { $skip = $false; continue }
        if ($w.StartsWith('-')) {
            if ($walletctlValues.ContainsKey("$path|$w") -or $walletctlValues.ContainsKey("|$w")) { $skip = $true }
            continue
        }
        $kids = $walletctlGroups[$path]
        if ($kids -and $kids -contains $w) { $path = ($path + ' ' + $w).Trim() }
    }
    $words = $walletctlWords[$path]
    if ($skip) {
        $v = $walletctlValues["$path|$prev"]
        if ($null -eq $v) { $v = $walletctlValues["|$prev"] }
        if ($v -eq '@profiles') {
            $f = $env:WALLETCTL_CONFIG
            if (-not $f) { $f = Join-Path $HOME '.config/walletctl/profiles.toml' }
            $words = @(Select-String -Path $f -Pattern '^\s*\[profiles\.([A-Za-z0-9_-]+)\]' -ErrorAction SilentlyContinue | ForEach-Object { $_.Matches[0].Groups[1].Value })
        } elseif ($v -eq '@files' -or -not $v) { return }
        else { $words = $v -split ' ' }
    }
    $words | Where-Object { $_ -like "$wordToComplete*" } |
        ForEach-Object { [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_) }
}
"""  # noqa: E501


def powershell(tree: Tree) -> str:
    def table(head: str, rows: list[tuple[str, str]]) -> list[str]:
        return [f"${head}", *(f"    '{key}' = {value}" for key, value in rows), "}"]

    def listed(words: list[str]) -> str:
        return "@(" + ",".join(f"'{w}'" for w in words) + ")"

    def args(node: Node) -> list[str]:
        values = _arg_values(node)
        return values.split() if "@" not in values else []

    return "\n".join([
        f"# {HEADER.format('PowerShell')}",
        "# Install: walletctl completion powershell | Out-String | Invoke-Expression"
        " (add the line to $PROFILE)",
        *table("walletctlWords = @{", [(p, listed(n.names + args(n) + n.spellings))
                                       for p, n in tree.items()]),
        *table("walletctlGroups = @{", [(p, listed(n.names)) for p, n in tree.items()
                                        if n.children]),
        *table("walletctlValues = @{  # 'path|option' = values",
               [(f"{p}|{o}", f"'{v}'") for p, n in tree.items() for o, v in n.takes.items()]),
        PS_COMPLETER])


RENDERERS: dict[str, Callable[[Tree], str]] = {
    "bash": bash, "zsh": zsh, "fish": fish, "powershell": powershell,
}


# --------------------------------------------------------------------------- the man page

MAN_HEADER = ".\\\" walletctl(1). Generated by `python -m walletctl.cli.completions`; do not edit."
MAN_FILES = (
    ("~/.config/walletctl/profiles.toml",
     "Merchant profiles (the platform's user config directory, honouring XDG_CONFIG_HOME); "
     "--config or WALLETCTL_CONFIG name another file. `walletctl profile example` prints a "
     "commented one."),
    ("~/.local/share/walletctl/history.sqlite3",
     "The history (audit log) of money movements (the platform's user data directory), unless "
     "the profile's [history] path, WALLETCTL_AUDIT_LOG or a shared PostgreSQL history "
     "([history] url, WALLETCTL_HISTORY_URL) is used."),
    ("~/.cache/walletctl/keys/",
     "Encryption keys fetched by `walletctl keys` (the platform's user cache directory)."),
    ("FILE.OP.journal",
     "A batch's write-ahead journal, beside its input file (--journal names another)."),
)


def esc(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, markdown code/emphasis set."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", text)
    return text


def _line(text: str) -> str:
    return "\\&" + text if text.startswith((".", "'")) else text


def _paragraphs(text: str) -> list[str]:
    """click help text as roff: paragraphs filled, ``\\b`` paragraphs kept line by line."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip("\n")):
        lines = para.splitlines()
        if lines and lines[0].strip() == "\b":
            kept = textwrap.dedent("\n".join(lines[1:])).splitlines()
            out += [".PP", ".nf"] + [_line(esc(x.rstrip())) for x in kept] + [".fi"]
        elif para.strip():
            out += [".PP", _line(esc(" ".join(para.split())))]
    return out


def _man_option(opt: Option) -> list[str]:
    names = ", ".join(f"\\fB{esc(o)}\\fR" for o in sorted(opt.opts, key=len))
    metavar = f" \\fI{esc(opt.metavar)}\\fR" if opt.takes_value and opt.metavar else ""
    return [".TP", names + metavar, _line(esc(opt.full_help or opt.help or "(no help)"))]


def _usage(node: Node) -> str:
    import click

    cmd = node.command
    ctx = click.Context(cmd, info_name=f"walletctl {node.path}".strip())
    pieces = " ".join(cmd.collect_usage_pieces(ctx))
    return f"walletctl {node.path} {pieces}".replace("  ", " ").strip()


def markdown_table(markdown: str, heading: str) -> list[list[str]]:
    """The rows (cells) of the first table under ``heading`` in a markdown document."""
    lines = markdown.splitlines()
    start = next((i for i, x in enumerate(lines) if x.strip().lstrip("#").strip() == heading
                  and x.startswith("#")), None)
    if start is None:
        raise ValueError(f"no section {heading!r}")
    rows: list[list[str]] = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().replace("\\|", "|")
                 for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if all(set(c) <= set("-: ") for c in cells):
            continue
        rows.append([re.sub(r"\[([^]]+)\]\([^)]+\)", r"\1", c) for c in cells])
    return rows[1:]  # without the header row


def render_manpage(tree: dict[str, Node], readme: str, guide: str) -> str:
    from walletctl import __version__

    root = tree[""]
    about = " ".join((root.command.help or "").split())
    out = [
        MAN_HEADER,
        f'.TH WALLETCTL 1 "" "walletctl {__version__}" "User Commands"',
        ".SH NAME",
        "walletctl \\- " + esc(about[0].lower() + about[1:].rstrip(".")),
        ".SH SYNOPSIS",
        ".B walletctl",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]",
        ".SH DESCRIPTION",
        _line(esc(about)),
        ".PP",
        "Global options may also follow the command (\\fBwalletctl lookup REF \\-o json\\fR).",
        "Each command's \\fB\\-\\-help\\fR shows its part of this page.",
        ".SH GLOBAL OPTIONS",
    ]
    for opt in root.options:
        out += _man_option(opt)
    out.append(".SH COMMANDS")
    for path, node in tree.items():
        if not path:
            continue
        out += [f'.SS "{esc(_usage(node))}"']
        out += _paragraphs(node.command.help or "")
        if node.children:
            out += [".PP", "Subcommands: " + ", ".join(
                f"\\fB{esc(name)}\\fR" for name, _ in node.children) + "."]
        for opt in node.options:
            if opt.opts[0] != "--help":
                out += _man_option(opt)
        epilog = getattr(node.command, "epilog", None)
        if epilog:
            out += _paragraphs(epilog)
    out.append(".SH EXIT STATUS")
    for code, name, meaning in markdown_table(readme, "Exit codes"):
        out += [".TP", f"\\fB{esc(code)}\\fR {esc(name)}", _line(esc(meaning))]
    out.append(".SH ENVIRONMENT")
    for variable, meaning in markdown_table(guide, "Environment variables"):
        out += [".TP", esc(variable) if variable.startswith("*") else f"\\fB{esc(variable)}\\fR",
                _line(esc(meaning))]
    out.append(".SH FILES")
    for path, meaning in MAN_FILES:
        out += [".TP", f"\\fI{esc(path)}\\fR", _line(esc(meaning))]
    out += [
        ".SH SEE ALSO",
        "The project's README.md and docs/guide.md (every command with examples).",
        "Shell completion: \\fBwalletctl completion bash|zsh|fish|powershell\\fR.",
        "",
    ]
    return "\n".join(out)


def render_from_checkout() -> str:
    """The page as the checkout's command tree and documents render it now."""
    from walletctl import shipped

    readme = (shipped.CHECKOUT / "README.md").read_text(encoding="utf-8")
    guide = (shipped.CHECKOUT / "docs" / "guide.md").read_text(encoding="utf-8")
    return render_manpage(command_tree(), readme, guide)


# --------------------------------------------------------------------------- the generator


def render_all() -> dict[str, str]:
    """{file name in completions/: its text}."""
    tree = command_tree()
    return {SHELLS[shell]: render(tree) for shell, render in RENDERERS.items()}


def shipped_script(shell: str) -> str:
    """The shipped script for ``shell``."""
    from walletctl import shipped

    return shipped.read("completions", SHELLS[shell])


def register(app: typer_t.Typer) -> None:
    import typer

    @app.command("completion", help=COMMANDS["completion"][1] + """

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
    from walletctl.render.output import write_text

    files = {(args.directory or shipped.CHECKOUT / "completions") / name: text
             for name, text in render_all().items()}
    if args.directory is None:
        files[shipped.CHECKOUT / "man" / "walletctl.1"] = render_from_checkout()
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        write_text(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
