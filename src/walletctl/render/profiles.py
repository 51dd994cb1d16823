"""Rendering of the ``profile`` commands' results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.render.console import escape, print_note
from walletctl.render.fit import print_fields, print_markup
from walletctl.render.formats import View, records, show
from walletctl.render.output import cell, flat

if TYPE_CHECKING:
    from walletctl.ops.new_profile import Added


def render_saved(output_format: str, record: dict[str, Any]) -> None:
    """A change to the profiles file: in a data format, its record on stdout (a table says
    it in its notes)."""
    show(records([record], document=record, table=lambda: None), output_format)


def render_profile_list(output_format: str, rows: list[dict[str, Any]] | None,
                        path: Path) -> None:
    """``profile list`` (``rows`` None: there is no profiles file yet)."""
    if rows is None:
        show(records([], table=lambda: None), output_format)
        print_note(f"no profiles yet ({path} does not exist)")
        print_note("create one with `walletctl profile add NAME --base-url URL --merchant-id "
                   "ID --store-id ID --user-id USER`")
        return
    show(records(rows, str(path), drop=("auth", "store_id", "merchant_id"),
                 table=None if rows else lambda: print_note(f"no profiles in {path}")),
         output_format)


def render_profile(output_format: str, name: str, settings: dict[str, Any]) -> None:
    """``profile show``: JSON as it is, CSV a (setting, value) row each, else a line each."""
    show(View(rows=[settings], document=settings,
              flat=[{"setting": k, "value": v} for k, v in _flatten(settings, empty="")],
              # never folded: a long path stays one word (copyable)
              table=lambda: print_fields(f"profile {escape(name)}", _flatten(settings))),
         output_format)


def _flatten(settings: dict[str, Any], *, empty: str = "-") -> list[tuple[str, str]]:
    """(setting, value) rows, a nested table's keys dotted (``history.limits.capture``); an
    unset value reads ``empty`` (a CSV cell stays empty)."""
    overridden = {f"paths.{key}" for key in settings.get("paths_overridden", ())}
    rows = []
    for key, value in flat(settings).items():
        if key == "paths_overridden":
            continue
        text = (empty if value is None else ("yes" if value else "no")
                if isinstance(value, bool) else cell(value))
        default = key.startswith("paths.") and key not in overridden
        rows.append((key, text + (" (default)" if default else "")))
    return rows


def render_added(output_format: str, added: Added) -> None:
    """``profile add``: its notes on stderr; in a data format, the record on stdout."""
    for note in added.notes:
        print_note(note)
    render_saved(output_format, {"profile": added.name, "file": str(added.file),
                                 "saved": True, "notes": added.notes, "reset": added.reset})


def render_checks(output_format: str, results: list[dict[str, Any]]) -> None:
    """``profile check``: one line per check (ok / warn / FAIL, and a hint), or the records."""
    show(records(results, table=lambda: _check_lines(results)), output_format)


def _check_lines(results: list[dict[str, Any]]) -> None:
    for r in results:
        status = ("[yellow]warn[/yellow]" if r["warning"] else "[green]ok  [/green]") \
            if r["ok"] else "[bold red]FAIL[/bold red]"
        label = f"{r['profile']}: {r['check']}" if r["profile"] else r["check"]
        print_markup(f"{status} {escape(label)}: {escape(r['detail'])}", indent="     ")
        if r["ok"] and r["hint"]:  # a warning's, or what a production environment means
            print_markup(f"     {escape('hint: ' + r['hint'])}", indent="       ")
