"""The history is an interface, not a dialect: nothing outside ``history/`` writes SQL or asks
which backend a history has (docs/ARCHITECTURE.md). A scan of every module's string constants
for SQL statements, and of its ``isinstance`` calls for a backend's types; the sandbox's own
store is a separate server's and is not scanned."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "walletctl"
SQL_KEPT_IN = ("history", "sandbox")
# where a database URL is read (config) and opened (history)
URL_KNOWN_IN = ("history", "config")
SQL = re.compile(
    r"\b(SELECT\s+(DISTINCT\s+)?[\w*(]|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b"
    r"|DELETE\s+FROM\b|CREATE\s+(TABLE|INDEX|TRIGGER|VIEW|UNIQUE)\b|ALTER\s+TABLE\b"
    r"|DROP\s+(TABLE|INDEX)\b|PRAGMA\s+\w)")
BACKEND_TYPES = {"DbUrl", "SqliteHistory", "PostgresHistory"}
# Inside the history, the modules that hold the desk's rules call the backends' typed
# operations (history/desk_tables.py) and hand them no SQL text
RULES_ONLY = ("approvals.py", "findings.py", "rulebook.py")
RAW_CALLS = {"read", "read_one", "execute", "rows", "run"}


def _modules(kept: tuple[str, ...]) -> list[Path]:
    return sorted(path for path in SRC.rglob("*.py")
                  if path.relative_to(SRC).parts[0] not in kept)


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant, an f-string's literal parts joined (the docstrings too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append((node.lineno, "".join(
                part.value if isinstance(part, ast.Constant) and isinstance(part.value, str)
                else "x" for part in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return found


def sql_in(source: str) -> list[tuple[int, str]]:
    return [(line, text.strip()[:60]) for line, text in _texts(ast.parse(source))
            if SQL.search(text)]


def backend_checks(source: str) -> list[tuple[int, str]]:
    """``isinstance(x, T)`` where T (or one of a tuple's) is a backend's type."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "isinstance" and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {k.id if isinstance(k, ast.Name) else
                     k.attr if isinstance(k, ast.Attribute) else "" for k in kinds}
            found += [(node.lineno, name) for name in sorted(names & BACKEND_TYPES)]
    return found


def test_the_scans_see_what_they_look_for() -> None:
    assert sql_in('q = "SELECT entry FROM events WHERE seq = ?"') == [
        (1, "SELECT entry FROM events WHERE seq = ?")]
    assert sql_in('q = f"DELETE FROM {table} WHERE key = ?"')
    assert sql_in('q = ("UPDATE rows SET state=? " "WHERE key=?")')
    assert not sql_in('m = "Select one with -p; update the profile, then delete it"')
    assert backend_checks("isinstance(where, DbUrl)") == [(1, "DbUrl")]
    assert backend_checks("isinstance(s, (int, history.sqlite.SqliteHistory))") == [
        (1, "SqliteHistory")]


def test_no_sql_outside_the_history() -> None:
    found = [f"{path.relative_to(SRC)}:{line}: {text}"
             for path in _modules(SQL_KEPT_IN)
             for line, text in sql_in(path.read_text(encoding="utf-8"))]
    assert not found, ("SQL outside walletctl/history (add a typed operation to the store "
                       "instead):\n" + "\n".join(found))


def test_nothing_outside_the_history_asks_which_backend_it_has() -> None:
    found = [f"{path.relative_to(SRC)}:{line}: isinstance(..., {name})"
             for path in _modules(URL_KNOWN_IN)
             for line, name in backend_checks(path.read_text(encoding="utf-8"))]
    assert not found, ("a backend's type asked outside walletctl/history and config (the "
                       "store says what is needed: backend, where, local_file()):\n"
                       + "\n".join(found))


def raw_calls(source: str) -> list[tuple[int, str]]:
    """Calls of a store's or transaction's own statement runners (``x.read(...)`` ...)."""
    return [(node.lineno, node.func.attr) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in RAW_CALLS]


def test_the_desk_s_rules_call_typed_operations_not_sql() -> None:
    found: list[str] = []
    for name in RULES_ONLY:
        text = (SRC / "history" / name).read_text(encoding="utf-8")
        found += [f"history/{name}:{line}: {what}"
                  for line, what in [*sql_in(text), *raw_calls(text)]]
    assert not found, ("SQL, or a statement run, in a module of the desk's rules (add a "
                       "typed operation to history/desk_tables.py and each backend):\n"
                       + "\n".join(found))
