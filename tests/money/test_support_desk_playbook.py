"""docs/support-desk.md run as printed: every `walletctl` command of its console blocks, in
order, on a real sandbox and history (the order set up as the page tells it), each exiting
as the page's `echo $?` says (0 where it says nothing), and the lines the page prints that
no clock or path changes (errors, verdicts, the resolution, the check the evidence note hands
on) found in the real output. ``bob$`` commands run as another OS account (``bob``); the
others as the page's ``root``."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from reconcile.helpers import post_followup

from .conftest import Desk, unique
from .test_order import _approved_checkout

PAGE = Path(__file__).resolve().parents[2] / "docs" / "support-desk.md"
PROMPT = re.compile(r"^(?P<who>bob)?\$ (?P<command>walletctl .*)$")
# what the page prints that the run must print too (normalised whitespace)
CHECKED = ("walletctl: error:", "The history and the gateway", "Finding #", "anchored:",
           "not anchored:")


@dataclass
class Step:
    who: str
    command: str
    exit: int = 0
    shown: list[str] = field(default_factory=list)


def steps(text: str) -> list[Step]:
    found: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        current: Step | None = None
        for line in block.splitlines():
            prompt = PROMPT.match(line)
            if prompt:
                current = Step(prompt["who"] or "root", prompt["command"])
                found.append(current)
            elif re.fullmatch(r"(bob)?\$ echo \$\?", line):
                continue
            elif current is not None and re.fullmatch(r"\d+", line):
                current.exit = int(line)
            elif current is not None:
                current.shown.append(line)
    return found


def _keys(tmp: Path) -> None:
    key = Ed25519PrivateKey.generate()
    (tmp / "desk-checkpoints.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (tmp / "desk-checkpoints.pub.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def _flat(text: str) -> str:
    """Whitespace normalised, and a key's id (16 hex digits) one placeholder."""
    return re.sub(r"\b[0-9a-f]{16}\b", "<key id>", " ".join(text.split()))


def test_the_playbook_runs_as_printed(desk: Desk, monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    from walletctl.history import recorder
    from walletctl.ops import desk as desk_ops

    text = PAGE.read_text(encoding="utf-8")
    ref = unique("ORDER")
    # the page's order: 400.00 pre-authorised, captured 100.00 and 200.00, refunded 20.00
    # with a reason, and 7.50 refunded straight at the gateway
    monkeypatch.setattr(recorder, "os_user", lambda: "root")
    monkeypatch.setattr(desk_ops, "os_user", lambda: "root")
    _approved_checkout(desk, ref, "400.00")
    desk.run("-p", "desk-a", "capture", ref, "--amount", "100.00", expect=0)
    desk.run("-p", "desk-a", "capture", ref, "--amount", "200.00", expect=0)
    desk.run("-p", "desk-a", "refund", ref, "--amount", "20.00", "--reason", "damaged box",
             "--yes", expect=0)
    post_followup(desk, ref, f"{ref}-DASH1", "7.50")
    _keys(tmp_path)

    ran = steps(text)
    assert len(ran) >= 7, ran
    assert any(s.who == "bob" for s in ran), "the page shows another desk member resolving"
    for step in ran:
        argv = shlex.split(step.command.replace("ORDER-1042", ref))[1:]
        append = None
        if ">>" in argv:
            append = tmp_path / argv[argv.index(">>") + 1]
            argv = argv[:argv.index(">>")]
        argv = ["desk-a" if a == "desk" else str(tmp_path / a) if re.fullmatch(
            r"[\w.-]+\.(pem|ndjson|jsonl)", a) else a for a in argv]
        with monkeypatch.context() as patch:
            patch.setattr(recorder, "os_user", lambda who=step.who: who)
            patch.setattr(desk_ops, "os_user", lambda who=step.who: who)
            got = desk.run(*argv, expect=step.exit, env={"COLUMNS": "80"})
        if append is not None:
            with append.open("a", encoding="utf-8") as out:
                out.write(got.stdout)
        said = _flat(got.stdout + "\n" + got.stderr).replace(str(tmp_path) + "/", "")
        for line in step.shown:
            if line.strip().startswith(CHECKED) and "..." not in line:
                assert _flat(line.replace("ORDER-1042", ref)) in said, (line, got)
            hint = re.search(r"check it with `([^`]*)`", line)
            if hint:  # the check the evidence note hands on, as the page prints it
                assert f"check it with `{hint[1]}`" in said, (line, got)
