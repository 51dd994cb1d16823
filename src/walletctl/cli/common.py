"""What command modules share: the options several declare, the client, the dry run, the
confirmations (a y/N, a typed amount, a production profile's name), request files.

Every refusal is a :class:`~walletctl.errors.UsageError` (exit 2), raised before anything is
sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from walletctl.cli.state import ENV, State
from walletctl.errors import RequestValidationError, UsageError
from walletctl.render.console import escape_controls, print_stderr

if TYPE_CHECKING:
    from walletctl.config.profile import Profile
    from walletctl.ops.connect import GatewayClient, PreparedCall

Reason = Annotated[
    str | None,
    typer.Option(help="Why (recorded in the history; a profile can require it)."),
]
Amount = Annotated[str | None, typer.Option(help="Amount in major units, e.g. 12.34.")]
Currency = Annotated[
    str | None, typer.Option(help="ISO 4217 code (default: the profile's currency).")
]
ConfirmAmount = Annotated[
    str | None,
    typer.Option(help="The amount, typed to confirm one above the profile's limit."),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the exact request; send nothing.")]
Rate = Annotated[float | None, typer.Option(min=0.01, help="Max requests per second.")]
# the lookups of `lookup --batch` and `recon` (the batch engine)
LookupConcurrency = Annotated[int, typer.Option(min=1, max=512, help="Lookups in flight.")]
LookupFailures = Annotated[
    int, typer.Option(min=1, help="Stop after K consecutive failed lookups.")
]


def make_client(state: State) -> GatewayClient:
    from walletctl.ops.connect import open_client

    return open_client(
        state.profile(), transport=ENV.transport, trace=print_stderr if state.verbose else None
    )


def print_dry_run(state: State, calls: list[PreparedCall]) -> None:
    """The exact request(s) that would be sent, secrets masked; nothing is sent."""
    from walletctl.render.dry_run import render_dry_run

    render_dry_run(state.output_format, [c.describe() for c in calls])


def missing(command: str, argument: str, instead: str) -> UsageError:
    """``command`` run without its ``argument`` (or the option given ``instead`` of it)."""
    return UsageError(f"{command}: missing {argument} (usage: walletctl {command} [OPTIONS] "
                      f"{argument}, or {instead})", hint=f"see `walletctl {command} --help`")


def confirm(summary: str, *, yes: bool, action: str, doing: str = "send") -> None:
    """Ask on a terminal; refuse without one unless --yes."""
    if yes:
        return
    if not ENV.is_interactive():
        raise UsageError(
            f"refusing to {doing} the {action} without confirmation: {ENV.why_not_asked()}",
            hint="pass --yes to confirm non-interactively",
        )
    print_stderr(summary)
    try:
        answer = typer.confirm(f"Proceed with the {action}?", default=False, err=True)
    except typer.Abort as exc:  # end of input (Ctrl-D) at the prompt: a "no" (exit 2)
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise  # Ctrl-C: interrupted (130), as everywhere else
        print_stderr()
        answer = False
    if not answer:
        raise UsageError(f"{action} cancelled: nothing was sent")


def terminal_prompt(*, empty_ok: bool = False) -> Callable[[str], str] | None:
    """A question asked on stderr when stdin is a terminal (None without one); Ctrl-D is
    an empty answer, and so is an empty line when ``empty_ok`` (else it is asked again)."""
    if not ENV.is_interactive():
        return None

    def ask(question: str) -> str:
        extra: dict[str, Any] = {"default": "", "show_default": False} if empty_ok else {}
        try:
            return str(typer.prompt(escape_controls(question), err=True, **extra))
        except typer.Abort:  # Ctrl-D: nothing typed
            print_stderr()
            return ""

    return ask


_DURATION = re.compile(r"(\d{1,6})([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def duration(text: str) -> timedelta | None:
    """``6d``, ``12h``, ``90m``, ``2w``, ``30s`` (None: not a duration)."""
    match = _DURATION.fullmatch(text.strip())
    return None if match is None else timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def parse_when(text: str, flag: str, now: datetime | None = None) -> str:
    """``7d``/``12h`` (ago), ``2026-11-01`` or an ISO time (UTC unless zoned) -> stored form."""
    now = now or datetime.now(UTC)
    value = text.strip()
    try:
        ago = duration(value)
        if ago is not None:
            when = now - ago
        else:
            when = datetime.fromisoformat(value)
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise UsageError(
            f"{flag}: {text[:40]!r} is neither a duration (7d, 12h, 30m) nor a date "
            "(2026-11-01, 2026-11-01T09:30)"
        ) from None
    from walletctl.models.entries import utc_text

    return utc_text(when)


def read_request_file(path: Path) -> dict[str, Any]:
    """A JSON or TOML request file (by extension; JSON numbers become Decimal)."""
    from walletctl.ops.user_files import read_document

    where = str(path)
    data = read_document(path, "--from-file", toml=path.suffix.lower() == ".toml")
    if not isinstance(data, dict):
        raise RequestValidationError([(f"--from-file {where}", "must hold one JSON/TOML object")])
    return data


# --------------------------------------------------------------------------- production

FLAG = "--confirm-profile"
TAG = "PRODUCTION"


def production_tag(profile: Profile) -> str:
    """``"PRODUCTION: "`` for a production profile, else ``""`` (plain text: it survives
    NO_COLOR, a pipe and a narrow terminal, since it starts the line)."""
    return f"{TAG}: " if profile.is_production else ""


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:77] + "...")


def confirm_production(profile: Profile, given: str | None, *, action: str,
                       ask: Callable[[str], str] | None = None) -> bool:
    """Require the profile's name before ``action`` is done against a production profile:
    ``given`` (``--confirm-profile``), whatever the environment, must be exactly its name;
    without it a production profile's name is asked for on a terminal (``ask``), refused
    without one (``--yes`` has no part in this). True when the name was typed at the prompt
    (a caller may skip its own y/N question)."""
    if given is not None:
        if given != profile.name:
            where = "production profile" if profile.is_production else "profile"
            raise UsageError(
                f"{FLAG} {_shown(given)} does not match the {where} {profile.name!r}: "
                f"refusing to {action}; nothing was sent",
                hint=f"pass {FLAG} {profile.name} (exactly the profile's name), or select "
                     "the profile you meant with -p")
        return False
    if not profile.is_production:
        return False
    if ask is None:
        ask = terminal_prompt(empty_ok=True)
    if ask is None:
        raise UsageError(
            f"profile {profile.name!r} is a production profile: refusing to {action} "
            f"without {FLAG} {profile.name} ("
            f"{'--no-input' if ENV.no_input else 'no terminal to type its name on'}); "
            "nothing was sent",
            hint=f"pass {FLAG} {profile.name} (--yes does not replace it)")
    typed = ask(f"{TAG}: type the profile's name ({profile.name}) to {action}")
    if typed.strip() != profile.name:
        raise UsageError(
            f"the name typed does not match the production profile {profile.name!r}: "
            f"{action} cancelled; nothing was sent")
    return True


def confirm_profiles(profiles: Iterable[Profile], given: Sequence[str], *,
                     action: str, required: bool = True) -> bool:
    """:func:`confirm_production` for each profile a command uses (a batch's rows may name
    other profiles): every ``--confirm-profile`` must name one of them and, when
    ``required`` (something is about to be sent), every production one must be confirmed.
    Returns True when a name was typed at a prompt."""
    used = {p.name: p for p in profiles}
    for name in given:
        if name not in used:
            only = next(iter(used.values())) if len(used) == 1 else None
            if only is not None:
                confirm_production(only, name, action=action)  # its mismatch message
            raise UsageError(
                f"{FLAG} {_shown(name)} is not a profile of this batch "
                f"({', '.join(sorted(used))}): refusing to {action}; nothing was sent",
                hint=f"pass {FLAG} with the name of each production profile it uses")
    typed = False
    for profile in used.values() if required else ():
        if profile.is_production:
            typed |= confirm_production(
                profile, profile.name if profile.name in given else None, action=action)
    return typed


def refuse_unconfirmed(profile: Profile, given: Sequence[str], *, action: str) -> None:
    """Without a terminal, refuse at once a production profile no ``--confirm-profile``
    names (before a batch opens its journal; the names a batch's rows need are checked by
    :func:`confirm_profiles` once its rows are read)."""
    if profile.is_production and profile.name not in given and not ENV.is_interactive():
        confirm_production(profile, given[0] if given else None, action=action, ask=None)


def refuse_production(profile: Profile, *, command: str) -> None:
    """Refuse a command made for a sandbox when the selected profile is a production one."""
    if profile.is_production:
        raise UsageError(
            f"{command}: profile {profile.name!r} is a production profile; {command} only "
            "acts on a sandbox: nothing was sent",
            hint="select a test profile with -p (or give the sandbox's --url)"
                 if command.startswith("sandbox") else "select a test profile with -p, "
                 "or leave -p out")
