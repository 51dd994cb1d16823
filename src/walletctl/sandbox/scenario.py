"""The one-command demo (``walletctl sandbox demo``, docs/sandbox.md): real walletctl commands
as subprocesses against an embedded sandbox, echoed as a shell transcript."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from walletctl.constants import Env
from walletctl.models.sandbox_values import DEFAULT_API_KEY
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

DEMO_PROFILE = "demo"
DEMO_KEY_ENV = "WALLETCTL_DEMO_KEY"
STEP_TIMEOUT = 120.0


def profile_toml(base_url: str, *, name: str = DEMO_PROFILE, key_env: str = DEMO_KEY_ENV,
                 amount_format: str = "minor", merchant_id: str = "M-DEMO",
                 store_id: str = "S-01", user_id: str = "demo-user", timeout: int = 30,
                 service_secret_env: str | None = None) -> str:
    """A profiles file for a sandbox at ``base_url`` (the format of docs/profiles.md)."""
    secret = f'service_secret_env = "{service_secret_env}"\n' if service_secret_env else ""
    return f"""default_profile = "{name}"

[profiles.{name}]
base_url = "{base_url}"
merchant_id = "{merchant_id}"
store_id = "{store_id}"
user_id = "{user_id}"
amount_format = "{amount_format}"
currency = "EUR"
timeout = {timeout}

[profiles.{name}.auth]
scheme = "PublicApiKey"
key_env = "{key_env}"
{secret}
[profiles.{name}.redirects]
return_url = "https://shop.example/return"
success_url = "https://shop.example/ok"
pending_url = "https://shop.example/pending"
error_url = "https://shop.example/error"
cancel_url = "https://shop.example/cancel"
refused_url = "https://shop.example/refused"
"""


def demo_steps(stamp: str) -> list[tuple[str, list[str]]]:
    sale, auth, auth2 = (f"ORDER-{stamp}-{s}" for s in ("SALE", "AUTH", "AUTH2"))
    p = ["-p", DEMO_PROFILE]
    t = ["-o", "table"]
    return [
        ("checkout sale", [*p, *t, "checkout", "--amount", "25.00", "--currency", "EUR",
                           "--ref", sale, "--type", "sale"]),
        ("approve sale", [*p, *t, "sandbox", "approve", sale]),
        ("checkout pre-authorisation", [*p, *t, "checkout", "--amount", "40.00", "--currency",
                                        "EUR", "--ref", auth, "--type", "preauth"]),
        ("approve pre-authorisation", [*p, *t, "sandbox", "approve", auth]),
        ("capture part", [*p, *t, "capture", auth, "--amount", "15.00"]),
        ("capture the rest", [*p, *t, "capture", auth]),
        ("refund part", [*p, *t, "refund", auth, "--amount", "5.00", "--yes"]),
        ("checkout another pre-authorisation", [*p, *t, "checkout", "--amount", "12.50",
                                                "--currency", "EUR", "--ref", auth2,
                                                "--type", "preauth"]),
        ("approve it", [*p, *t, "sandbox", "approve", auth2]),
        ("reverse it", [*p, *t, "reverse", auth2, "--yes"]),
        ("lookup", [*p, *t, "lookup", auth]),
        ("history", [*t, "history"]),
    ]


def command_lines(args: list[str], width: int) -> str:
    r"""``$ walletctl ARGS`` broken between words with `` \`` continuations to fit ``width``."""
    words = ["$", "walletctl", *(shlex.quote(a) for a in args)]
    lines: list[str] = []
    current = ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if current and len(candidate) + 2 > width:  # room for " \"
            lines.append(current + " \\")
            current = "    " + word
        else:
            current = candidate
    lines.append(current)
    return "\n".join(lines) + "\n"


def comment_lines(text: str, width: int) -> str:
    """A ``# ...`` comment wrapped between words to ``width`` columns."""
    return "\n".join(textwrap.wrap(text, width=max(width, 20), initial_indent="# ",
                                   subsequent_indent="# ", break_long_words=False,
                                   break_on_hyphens=False)) + "\n"


def run_demo(out: TextIO, *, keep_going: bool = False, python: str | None = None,
             width: int = 80, fit: Callable[[str], str] | None = None) -> str | None:
    """Run the demo, writing the transcript to ``out`` in ``width`` columns; the first failed
    step's label. ``fit``: the CLI's word wrapper for the steps' messages (a step's output is
    piped here, so it is not wrapped by the step itself; its tables already fit)."""
    failed: str | None = None
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb, \
            tempfile.TemporaryDirectory(prefix="walletctl-demo-") as tmp:
        path = Path(tmp) / "profiles.toml"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(profile_toml(sb.url))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
        env[Env.CONFIG] = str(path)
        env[DEMO_KEY_ENV] = DEFAULT_API_KEY
        env[Env.AUDIT_LOG] = str(Path(tmp) / "history.sqlite3")  # not the user's own history
        env["COLUMNS"] = str(width)  # the steps' tables fit the demo's terminal
        out.write(comment_lines(
            f"embedded sandbox at {sb.url}; profile '{DEMO_PROFILE}' and its history in a "
            f"temporary directory (WALLETCTL_CONFIG, WALLETCTL_AUDIT_LOG), key from "
            f"${DEMO_KEY_ENV}", width))
        out.flush()
        stamp = time.strftime("%H%M%S")  # a fresh sandbox each run: short references suffice
        for label, args in demo_steps(stamp):
            out.write("\n" + command_lines(args, width))
            out.flush()
            try:
                proc = subprocess.run(
                    [python or sys.executable, "-m", "walletctl", *args],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    timeout=STEP_TIMEOUT, stdin=subprocess.DEVNULL, check=False,
                )
                code, output = proc.returncode, proc.stdout
            except subprocess.TimeoutExpired:
                code, output = -1, f"timed out after {STEP_TIMEOUT:.0f} s\n"
            out.write(fit(output.removesuffix("\n")) + "\n" if fit and output else output)
            if code != 0:
                out.write(comment_lines(f"step '{label}' failed (exit code {code})", width))
                failed = failed or label
                if not keep_going:
                    break
            out.flush()
        out.write("\n# sandbox stopped\n" if failed is None else "")
        out.flush()
    return failed
