"""Every command that prints a table or a message, in a real terminal (tmux) 40, 60 and 80
columns wide: no line wider than the terminal (nothing the terminal had to wrap, but a single
word longer than the whole line), no word or number split over two lines, and every word of
the command's ``-o json`` output that its wide (200 columns) view shows is on the narrow
screen whole, or the screen says a column was "hidden at N columns".

One sandbox (``sandbox serve --write-profile``) serves every command; the four widths run
side by side, each in a tmux server of its own (a socket named for this test run). In each
window one Python process runs every command in turn through walletctl's own entry point,
with the window's terminal as its stdin, stdout and stderr (:data:`DRIVER`): the width is the
terminal's, as for ``walletctl`` started there, at the cost of one interpreter, not twenty.
``test_a_command_started_as_its_own_process_shows_the_drivers_screen`` holds the two alike.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from cli_runner import run_walletctl

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (.ci/run installs it)")

WIDTHS = (40, 60, 80)
WIDE = 200
WALLETCTL = f"{shlex.quote(sys.executable)} -m walletctl"
REF = "W-1-AUTH"

# (name, the command on the screen, its JSON form or None). The batch and the smoke run
# read state the fixture left: a batch journal all done, a profile whose service secret
# the public key service refuses.
COMMANDS: list[tuple[str, str, str | None]] = [
    ("lookup", f"lookup {REF}", f"-o json lookup {REF}"),
    ("history", "history", "-o json history"),
    # one order: the batches of the other widths run at the same time, and a recon of the
    # whole window saw some of their rows on one screen and not on another
    ("recon", f"recon --since 1d --ref {REF}", f"-o json recon --since 1d --ref {REF}"),
    ("approvals", "approvals", "-o json approvals"),
    ("approval", "approvals show 1", "-o json approvals show 1"),
    ("smoke", "-p bad smoke", None),
    ("batch", "capture --batch seed.csv", "-o json capture --batch seed.csv"),  # its own
    ("check", "profile check sbx", "-o json profile check sbx"),
    ("values", "sandbox values", "-o json sandbox values"),
    ("ledger", "sandbox ledger", "-o json sandbox ledger"),
    ("seed", "sandbox seed 3 --ref 'seed-{n:02}-{run}' --csv seed3.csv",
     "-o json sandbox seed 3 --ref 'seed-{n:02}-{run}' --csv seed3j.csv"),
    ("demo", "sandbox demo", None),
    ("order", f"order {REF}", f"-o json order {REF}"),
    # --help (issue 46): click's own layout never went under 50 columns
    ("helproot", "--help", None),
    ("helpcapture", "capture --help", None),
    ("helpsmoke", "smoke --help", None),
    ("helpserve", "sandbox serve --help", None),
]
NOTE = re.compile(r"hidden at (\d+) columns")
# Words any screen may show that no other rendering has (the hidden-columns note, prompts)
EXTRA = {"hidden", "at", "columns", "-o", "json", "shows", "every", "field",
         "bar", "percent", "elapsed", "remaining"}  # a batch's progress bar's columns
# Commands whose values change from run to run (times, generated references): their JSON
# words are compared with run-dependent digits and run ids made equal
VOLATILE = {"batch", "seed", "recon", "order"}


def _normal(token: str) -> str:
    """A token with what changes from run to run (times, amounts drawn at random, run ids,
    a checkout's payment page) made equal."""
    token = re.sub(r"/pay/\S+", "/pay/P", token)
    return re.sub(r"\d[\d,]*", "9", re.sub(r"[0-9a-f]{6,}", "H", token))


def _forms(token: str) -> set[str]:
    """A wide screen's token and the forms a narrow one shows it in: an ISO time as date
    and time, a list of settings (``a=1;b=2``) in runs of whole settings."""
    forms = {token}
    if re.match(r"\d{4}-\d{2}-\d{2}T", token):
        date, _, time_of_day = token.partition("T")
        forms |= {date, time_of_day.split(".")[0][:8], time_of_day.split(".")[0]}
    return {_normal(f) for f in forms}


def _whole_settings(token: str, pieces: set[str]) -> bool:
    return ";" in token and all(p in pieces for p in token.strip(";").split(";"))


def _tokens(text: str) -> list[str]:
    found = []
    for raw in text.split():
        token = raw.strip(",;:()[]`'\".#")
        if token and re.search(r"\w", token):
            found.append(token)
    return found


def _json_words(document: Any) -> set[str]:
    """The words of every scalar in a JSON document (keys are not shown, values are)."""
    words: set[str] = set()
    if isinstance(document, dict):
        for value in document.values():
            words |= _json_words(value)
    elif isinstance(document, list):
        for value in document:
            words |= _json_words(value)
    elif isinstance(document, str | int | float) and not isinstance(document, bool):
        words |= set(_tokens(str(document)))
    return words


# Run in each tmux window: every step's command through the app's entry point, in the
# step's directory, its screen after a marker line; then the end marker.
DRIVER = """\
import json, os, sys
from walletctl.cli.main import app
for name, where, argv in json.load(open(sys.argv[1])):
    print("=== " + name, flush=True)
    os.chdir(where)
    sys.argv = ["walletctl", *argv]
    app(args=argv, prog_name="walletctl", standalone_mode=False)
    sys.stdout.flush()
    sys.stderr.flush()
"""


class Served:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env

    def run(self, argv: str, check: int | None = 0) -> subprocess.CompletedProcess[str]:
        """``walletctl ARGV`` piped, in this process (:mod:`cli_runner`): the setup, before
        any screen."""
        proc = run_walletctl(shlex.split(argv), env=self.env, cwd=self.root)
        return self._checked(argv, proc, check)

    def run_process(self, argv: str, check: int | None = 0) -> subprocess.CompletedProcess[str]:
        """``walletctl ARGV`` as a process: the ``-o json`` documents, taken while the screens
        run, at a process's pace (in-process, the batch's entries reached some widths'
        history screens and not others)."""
        proc = subprocess.run(f"{WALLETCTL} {argv}", shell=True,  # noqa: S602 - quoted here
                              cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, check=False)
        return self._checked(argv, proc, check)

    @staticmethod
    def _checked(argv: str, proc: subprocess.CompletedProcess[str],
                 check: int | None) -> subprocess.CompletedProcess[str]:
        if check is not None:
            assert proc.returncode == check, (argv, proc.stdout, proc.stderr)
        return proc


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("width")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WALLETCTL_", "COLUMNS"))}
    env.update(WALLETCTL_CONFIG=str(root / "profiles.toml"), NO_COLOR="1", HOME=str(root),
               WALLETCTL_AUDIT_LOG=str(root / "history.db"), XDG_CACHE_HOME=str(root / "c"),
               # the served sandbox's ledger (--write-profile keeps it in the state directory):
               # this fixture's own, not the test process's (a second fixture in the same
               # process found W-1-AUTH already approved)
               XDG_STATE_HOME=str(root / "state"), XDG_DATA_HOME=str(root / "data"),
               XDG_CONFIG_HOME=str(root / "config"),
               WRONG_SECRET="not-the-service-secret")
    ready = root / "ready"
    server = subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "--quiet",
         "--ready-file", str(ready), "--write-profile", "sbx"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert server.poll() is None, "sandbox serve stopped"
            assert time.monotonic() < deadline, "sandbox serve not ready in 60 s"
            time.sleep(0.05)
        sb = Served(root, env)
        url = ready.read_text().strip()
        sb.run(f"checkout --amount 40 --currency EUR --ref {REF} --type preauth")
        sb.run(f"sandbox approve {REF}")
        sb.run(f"capture {REF} --amount 15")
        sb.run(f"refund {REF} --amount 5 --yes")
        sb.run("profile set sbx history.approvals.refund 2")
        sb.run(f"refund {REF} --amount 3 --yes --reason 'parcel lost in transit'", check=12)
        sb.run("sandbox seed 1 --ref 'seed-{n:02}-{run}' --csv seed-first.csv")  # in ledgers
        sb.run("sandbox seed 100 --ref 'b-{n:03}-{run}' --csv seed-all.csv")
        # the ledger's table shows its first 200 transactions and a note counting the rest:
        # past 200 before any screen is taken, every width shows the same rows and the note
        # (the windows' batches add their captures while the others take their screens)
        sb.run("sandbox seed 120 --ref 'pad-{n:03}-{run}'")
        header, *rows = (root / "seed-all.csv").read_text().splitlines()
        for n, batch in enumerate((*WIDTHS, WIDE, "json")):
            (root / str(batch)).mkdir()
            (root / str(batch) / "seed.csv").write_text(
                "\n".join([header, *rows[n * 20:(n + 1) * 20]]) + "\n")
        sb.run(f"profile add bad --base-url {url} --service-secret-env WRONG_SECRET")
        yield sb
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def _screens(sb: Served, width: int, socket: str,
             commands: list[tuple[str, str, str | None]] = COMMANDS) -> dict[str, str]:
    """Each command's screen in a ``width``-column tmux window, the driver running them in
    turn (lines the terminal wrapped joined back: -J)."""
    plan = sb.root / f"run-{width}-{len(commands)}.json"
    steps = []
    for name, argv, _ in commands:
        if name == "demo" and width == WIDE:
            continue  # the slowest: its narrow screens are compared with one another
        # each width's batch is a batch of its own (its CSV in a directory of its own)
        where = sb.root / str(width) if name == "batch" else sb.root
        steps.append([name, str(where), shlex.split(argv)])
    plan.write_text(json.dumps(steps))
    driver = sb.root / "driver.py"
    driver.write_text(DRIVER)
    screen = _window(sb, socket, f"w{width}", width,
                     f"{shlex.quote(sys.executable)} {driver} {plan}")
    parts = re.split(r"^=== (\w+)$", screen, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _window(sb: Served, socket: str, session: str, width: int, command: str) -> str:
    """What ``command`` (a shell line, in the served directory) left on the screen of a
    ``width``-column tmux window, up to its ``=== end`` line."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sb.env.items()
                   if k.isidentifier())
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", session, "-x", str(width),
                    "-y", "50", "-c", str(sb.root),
                    f"env -u COLUMNS -u LINES {env} {command}; echo '=== end'; sleep 600"],
                   check=True, timeout=30)
    subprocess.run(["tmux", "-L", socket, "set-option", "-t", session, "history-limit",
                    "20000"], check=True, timeout=30)
    deadline = time.monotonic() + 240
    while True:
        screen = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-J", "-t",
                                 session, "-S", "-"], capture_output=True, text=True,
                                check=True, timeout=30).stdout
        if "=== end" in screen or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert "=== end" in screen, screen[-2000:]
    # (a note that depends on what else runs: four demos at once wait for one another)
    return re.sub(r"^walletctl: waiting\b.*\n", "", screen, flags=re.MULTILINE)


def test_a_command_started_as_its_own_process_shows_the_drivers_screen(
        served: Served) -> None:
    """The driver's screens are those of ``walletctl`` started in the window: the same
    command at 40 columns, once each way."""
    socket = f"walletctl-width-{uuid.uuid4().hex[:8]}"
    order = [c for c in COMMANDS if c[0] == "order"]
    try:
        alone = _window(served, socket, "alone", 40, f"{WALLETCTL} {order[0][1]}")
        driven = _screens(served, 40, socket, order)["order"]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, timeout=30)
    alone = alone.split("=== end")[0]
    assert alone.strip(), alone
    assert "Traceback" not in alone, alone
    assert max(cell_len(line) for line in alone.splitlines()) <= 40, alone
    assert alone.strip() == driven.strip()


def _fragments(screens: dict[int, str]) -> list[str]:
    """Tokens of one width's screen that are only a piece of a token of another's (a word
    split over two lines): for the demo, whose wide screen is not taken."""
    tokens = {w: {_normal(t) for t in _tokens(text)} for w, text in screens.items()}
    found = []
    for width, mine in tokens.items():
        others = set().union(*(t for w, t in tokens.items() if w != width))
        found += [f"{t} at {width}" for t in mine - others
                  if any(t in o and t != o for o in others)]
    return found


@pytest.mark.slow
def test_every_command_fits_40_60_and_80_columns(served: Served) -> None:
    socket = f"walletctl-width-{uuid.uuid4().hex[:8]}"
    try:
        with ThreadPoolExecutor(len(WIDTHS) + 1) as pool:
            futures = {w: pool.submit(_screens, served, w, socket) for w in (*WIDTHS, WIDE)}
            documents = {name: served.run_process(argv.replace("seed.csv", "json/seed.csv"),
                                                  check=None).stdout
                         for name, _, argv in COMMANDS if argv is not None}
            screens = {w: f.result() for w, f in futures.items()}
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, timeout=30)
    problems: list[str] = []
    demo = {w: screens[w]["demo"] for w in WIDTHS}
    problems += [f"demo: broken word {f}" for f in _fragments(demo)]
    for name, _, json_argv in COMMANDS:
        if name == "demo":
            for width, screen in demo.items():
                problems += [f"demo at {width}: a line of {cell_len(line)}: {line!r}"
                             for line in screen.splitlines()
                             if cell_len(line) > width and " " in line.strip()]
            continue
        wide = screens[WIDE][name]
        vocabulary = {f for t in _tokens(wide) for f in _forms(t)} | EXTRA | {"9"}
        pieces = {_normal(p) for t in _tokens(wide) for p in t.split(";")}
        shown: set[str] = set()
        same = _normal if name in VOLATILE else str
        if json_argv is not None:
            document = json.loads(documents[name])
            shown = {same(w) for w in _json_words(document) if _normal(w) in vocabulary}
        for width in WIDTHS:
            screen = screens[width][name]
            assert "Traceback" not in screen, screen
            for line in screen.splitlines():
                if cell_len(line) > width and " " in line.strip():
                    problems.append(f"{name} at {width}: a line of {cell_len(line)}: {line!r}")
            for line in screen.splitlines():  # an amount and its currency stay together
                problems += [f"{name} at {width}: a currency parted from its amount: {line!r}"
                             for m in re.finditer(r"(\S*)\s+EUR\b", line)
                             if "│" in line and not re.fullmatch(r"[\d,.]+", m.group(1))]
            tokens = {_normal(t) for t in _tokens(screen)}
            notes = {int(n) for n in NOTE.findall(screen)}
            broken = sorted(t for t in tokens - vocabulary
                            if not _whole_settings(t, pieces) and not _elided(t, vocabulary))
            if broken:
                problems.append(f"{name} at {width}: broken words {broken}")
            on_screen = {same(t) for t in _tokens(screen)}
            missing = sorted(w for w in shown - on_screen if cell_len(w) < width - 6)
            if missing and width not in notes:
                problems.append(f"{name} at {width}: {missing} not shown and no hidden note")
    assert not problems, "\n".join(problems) + "\n\n" + "\n".join(
        f"--- {name} at 40\n{screens[40][name]}" for name, _, _ in COMMANDS)


def _elided(token: str, vocabulary: set[str]) -> bool:
    """A word shown with its middle elided to fit (a long path: ``/tmp/…/history.db``): its
    start and its end are those of one whole word."""
    start, mark, end = token.partition("…")
    return bool(mark) and any(w.startswith(start) and w.endswith(end) and len(w) > len(token)
                              for w in vocabulary)


def test_piped_text_is_never_wrapped(tmp_path: Path) -> None:
    """Wrapping is for a terminal: piped (a script, a CI log), every message stays one line
    whatever $COLUMNS says."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WALLETCTL_")}
    env.update(COLUMNS="40", WALLETCTL_CONFIG=str(tmp_path / "none.toml"))
    values = subprocess.run([sys.executable, "-m", "walletctl", "-o", "table", "sandbox",
                             "values"], capture_output=True, text=True, env=env, timeout=60,
                            check=True)
    assert ("Credentials: Authorization: PublicApiKey sandbox-api-key (any merchant); public "
            "key service Basic <userId>:sandbox-secret.") in values.stdout.splitlines()
    error = subprocess.run([sys.executable, "-m", "walletctl", "-p", "nope", "lookup", "X"],
                           capture_output=True, text=True, env=env, timeout=60, check=False)
    assert len(error.stderr.splitlines()[0]) > 40, error.stderr
