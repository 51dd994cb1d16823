"""Every command of ``walletctl --help`` with ``-o json``, piped: one parseable JSON document.

The list of commands is read from ``walletctl --help`` (and each group's ``--help``), so a new
command fails here until it is covered. Only commands whose output is a file to save, or a
server, are exempt.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from first_hour_fixtures import WALLETCTL, Served, wallet_event

# Not data: they print a file to save (a shell script, a TOML file) or serve until stopped.
EXEMPT = {
    "completion": "prints a shell script to save",
    "profile example": "prints a TOML file to save",
    "sandbox serve": "a server (its --print-profile prints TOML)",
    "sandbox proxy": "a server",
    "sandbox drift": "needs a recording: its -o json is parsed in tests/sandbox/test_fidelity.py",
    # a second operator's commands: their -o json is parsed where there are two operators
    # (tests/pg/test_approvals.py, tests/money/test_approvals_local.py)
    "approve": "a second operator",
    "approvals show": "a filed request",
    "approvals refuse": "a second operator",
    "recon resolve": "a recorded finding (tests/reconcile/test_findings_local.py)",
}


def _commands(sb: Served) -> list[str]:
    """The commands `walletctl --help` lists, each group expanded to its subcommands."""
    import click

    from walletctl.cli.registry import load_command

    out = sb.run("--help", columns=200).stdout
    names = re.findall(r"^  ([a-z][a-z-]*)  ", out.split("Commands:")[-1], re.M)
    found: list[str] = []
    for name in names:
        command = load_command(name)
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # the group runs on its own too
                found.append(name)
            found.extend(f"{name} {sub}" for sub in command.list_commands(click.Context(command)))
        else:
            found.append(name)
    return found


@pytest.mark.slow
def test_every_command_prints_one_json_document(served_sandbox: Served, tmp_path: Path) -> None:
    sb = served_sandbox
    # The two slow ones (each runs its own embedded sandbox) run beside the others.
    slow = {name: subprocess.Popen([*WALLETCTL, "-o", "json", *args], env=sb.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, text=True)
            for name, args in (("smoke", ["smoke", "--embedded", "--scenario", "redirect-sale"]),
                               ("sandbox demo", ["sandbox", "demo"]))}
    for ref, kind in (("J-SALE", "sale"), ("J-AUTH", "preauth"), ("J-AUTH2", "preauth"),
                      ("J-DEC", "sale"), ("J-CAN", "sale")):
        sb.run("checkout", "--amount", "20.00", "--ref", ref, "--type", kind)
    for ref in ("J-SALE", "J-AUTH", "J-AUTH2"):
        sb.run("sandbox", "approve", ref)
    event = wallet_event(sb, "sbx", "J-WP", tmp_path)
    pan = json.loads(wallet_event(sb, "sbx", "J-3DS", tmp_path, card="visa-pan").read_text())
    argv = {
        "checkout": ["checkout", "--amount", "5.00", "--ref", "J-NEW"],
        "capture": ["capture", "J-AUTH", "--amount", "2.00"],
        "refund": ["refund", "J-AUTH", "--amount", "1.00", "--yes"],
        "reverse": ["reverse", "J-AUTH2", "--yes"],
        "lookup": ["lookup", "J-AUTH"],
        "recon": ["recon"],  # before `sandbox reset` (which would make it a mismatch)
        # after the capture and refund on it, before the reset; its bundle checked next
        "order": ["order", "J-AUTH", "--evidence", str(tmp_path / "case.json")],
        "history check-evidence": ["history", "check-evidence", str(tmp_path / "case.json")],
        "recon findings": ["recon", "findings"],
        "keys": ["keys"],
        "account": ["account", "--event", str(event)],
        "authorize": ["authorize", "--event", str(event), "--amount", "3.00", "--currency",
                      "EUR", "--ref", "J-WP", "--type", "sale", "--yes"],
        "sandbox wait": ["sandbox", "wait", sb.url],
        "sandbox 3ds": ["sandbox", "3ds", pan["transactionAccountId"]],
        "sandbox approve": ["sandbox", "approve", "J-NEW"],
        "sandbox decline": ["sandbox", "decline", "J-DEC"],
        "sandbox cancel": ["sandbox", "cancel", "J-CAN"],
        "sandbox ledger": ["sandbox", "ledger"],
        "sandbox values": ["sandbox", "values"],
        "sandbox faults": ["sandbox", "faults", "--latency", "0"],
        "sandbox seed": ["sandbox", "seed", "3", "--csv", str(tmp_path / "seed.csv")],
        "sandbox reset": ["sandbox", "reset"],  # last of the sandbox commands (clears it)
        "profile list": ["profile", "list"],
        "profile show": ["profile", "show"],
        "profile check": ["profile", "check"],
        "profile add": ["profile", "add", "extra", "--base-url", sb.url, "--merchant-id", "M",
                        "--store-id", "S", "--user-id", "u", "--key-env", "EXTRA_KEY"],
        "profile set": ["profile", "set", "extra", "currency", "EUR"],
        "profile unset": ["profile", "unset", "extra", "currency"],
        "profile default": ["profile", "default", "sbx"],
        "profile remove": ["profile", "remove", "extra", "--yes"],
        "history": ["history"],
        "history verify": ["history", "verify"],
        "history anchor": ["history", "anchor"],
        "history setup": ["history", "setup"],  # the local file (a database: tests/pg)
        "approvals": ["approvals"],
        "history policy": ["history", "policy", "set", "limits.capture", "1000"],  # the last
    }
    commands = _commands(sb)
    assert "lookup" in commands
    assert "profile add" in commands
    missing = [c for c in commands if c not in argv and c not in EXEMPT and c not in slow]
    assert not missing, f"commands without a -o json check: {missing}"
    outputs = {name: sb.run("-o", "json", *args).stdout for name, args in argv.items()}
    for name, proc in slow.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, (name, stderr)
        outputs[name] = stdout
    for name, stdout in outputs.items():
        try:
            json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{name}: stdout is not one JSON document ({exc}):\n"
                                 f"{stdout[:500]}") from None
