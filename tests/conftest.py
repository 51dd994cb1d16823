"""Root fixtures: every test runs with its own HOME/XDG dirs and no WALLETCTL_* env."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Shared sandbox fixtures (live_sandbox, sandbox_app, ...), see tests/sandbox_fixtures.py.
# pytester: the tests of walletctl's own pytest plugin (tests/testing).
pytest_plugins = [
    "pytester",
    *(["sandbox_fixtures"] if (Path(__file__).parent / "sandbox_fixtures.py").exists() else []),
    "first_hour_fixtures",  # served_sandbox: `sandbox serve --write-profile` on a real port
    "browser_fixtures",  # pw, browser: one headless Chromium per test module
    "pg_fixtures",  # pg_cluster, pg_desk, pg_private: a real PostgreSQL server (marker postgres)
]

TEST_API_KEY = "sandbox-api-key"

# The suite signals walletctl as a terminal does (Ctrl-C, a hang-up). A run started under nohup
# or as a background job of a script has SIGHUP or SIGINT ignored, and every child would inherit
# that (walletctl keeps a signal its parent ignores ignored, as nohup asks): set them back here,
# in each process of the run, so the children start as a shell at a terminal starts them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

# Module- and session-scoped fixtures run before the per-test isolation below: the history
# (audit log) and the state directory of walletctl run from them are this process's own too,
# never the user's (a history shared across runs would hold references a fresh sandbox reuses).
_SESSION_STATE = Path(tempfile.mkdtemp(prefix="walletctl-tests-"))
os.environ["WALLETCTL_AUDIT_LOG"] = str(_SESSION_STATE / "audit" / "history.sqlite3")
os.environ["XDG_STATE_HOME"] = str(_SESSION_STATE / "state")
os.environ["XDG_DATA_HOME"] = str(_SESSION_STATE / "share")

# Property tests (hypothesis, schemathesis) are deterministic by default, so a run fails or
# passes the same way on every machine and CI never fails on an example nobody can replay;
# HYPOTHESIS_PROFILE=explore draws new examples each run (docs/testing.md: how to hunt).
settings.register_profile("deterministic", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(autouse=True)
def _isolate_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    for name in list(os.environ):
        if name.startswith("WALLETCTL_"):
            monkeypatch.delenv(name, raising=False)
    # The history (audit log) of money-moving commands: never the real user data dir.
    monkeypatch.setenv("WALLETCTL_AUDIT_LOG", str(home / "audit" / "history.sqlite3"))
    from walletctl.cli.state import ENV

    saved = (ENV.transport, ENV.stdin_isatty, ENV.stdout_isatty)
    yield
    ENV.transport, ENV.stdin_isatty, ENV.stdout_isatty = saved


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give schemathesis's per-operation items their own ids (they share the function's id,
    so pytest's progress stopped short of 100% and -k could not pick one operation)."""
    seen: dict[str, int] = {}
    for item in items:
        seen[item.nodeid] = seen.get(item.nodeid, 0) + 1
    for item in items:
        label = getattr(item, "operation_label", None)
        if not label or seen[item.nodeid] < 2 or item.nodeid.endswith("]"):
            continue
        node_id = getattr(item, "_id", None)
        if node_id is not None and getattr(node_id, "params", 1) is None:  # pytest 9: NodeId
            object.__setattr__(item, "_id", node_id.with_params(label))
        elif hasattr(item, "_nodeid"):  # older pytest: a plain string
            object.__setattr__(item, "_nodeid", f"{item.nodeid}[{label}]")
    items[:] = longest_first(items, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def longest_first(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` ordered so that each pytest-xdist worker starts with its share of the
    longest tests (marked ``slow``). ``--dist worksteal`` first hands each of the W workers
    one contiguous slice of the list (the first N // W items, then ...), and a long test at
    the end of a slice kept its worker busy after the others had run out. So each slice
    begins with the slow tests of a few modules (a module's slow tests stay on one worker:
    they share its fixtures; the modules with the most slow tests are dealt first, each to
    the slice with the fewest yet), followed by its part of the rest, in collection order."""
    groups: dict[str, list[pytest.Item]] = {}
    rest: list[pytest.Item] = []
    for item in items:
        if item.get_closest_marker("slow") is None:
            rest.append(item)
        else:
            groups.setdefault(item.nodeid.split("::")[0], []).append(item)
    dealt: list[list[pytest.Item]] = [[] for _ in range(max(workers, 1))]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(dealt, key=len).extend(group)
    ordered: list[pytest.Item] = []
    left = len(items)
    for number, slow in enumerate(dealt):
        size = left // (len(dealt) - number)  # the slice worksteal will send this worker
        take = max(size - len(slow), 0)
        ordered += slow + rest[:take]
        rest = rest[take:]
        left -= len(slow) + take
    return ordered + rest


def pytest_report_header() -> str:
    from timescale import ENV, SCALE

    return f"{ENV}: {SCALE:g} (the factor of every wall-clock bound; tests/timescale.py)"
