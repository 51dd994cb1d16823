"""Options several commands share, declared once (typer reads the ``Annotated`` metadata)."""

from __future__ import annotations

from typing import Annotated

import typer

Reason = Annotated[
    str | None,
    typer.Option(help="Why (recorded in the history; a profile can require it)."),
]
ConfirmAmount = Annotated[
    str | None,
    typer.Option(help="The amount, typed to confirm one above the profile's limit."),
]
