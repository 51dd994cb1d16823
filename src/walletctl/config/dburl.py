"""A shared history's address: ``postgresql://ROLE@HOST:PORT/DB`` (``[history] url`` or
``WALLETCTL_HISTORY_URL``).

A password never belongs here: libpq finds it in its own places (``PGPASSWORD``,
``~/.pgpass``, a service file), so profiles can be shared and messages can name the server.
A URL with one is refused without repeating it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

SCHEMES = ("postgresql", "postgres")
# libpq's waits: (default, lowest, highest, unit). walletctl always passes every one, so a
# wait is never libpq's "for ever" (0, or none given); a URL may tune each within bounds.
# The keepalives_* go to the server too (tcp_keepalives_*): each end drops a dead peer.
WAITS: dict[str, tuple[int, int, int, str]] = {
    "connect_timeout": (5, 2, 60, " s"),
    "keepalives": (1, 1, 1, ""),  # on: a URL may only say so
    "keepalives_idle": (10, 1, 300, " s"),
    "keepalives_interval": (5, 1, 60, " s"),
    "keepalives_count": (3, 1, 20, ""),
    "tcp_user_timeout": (15000, 1000, 120000, " ms"),  # sent data unacknowledged this long
}
# libpq parameters a URL may carry; anything else (password above all) is refused
ALLOWED_PARAMS = frozenset({
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl", "service", "passfile",
    "target_session_attrs", "host", "port", "user", "dbname", "application_name",
    "gssencmode", *WAITS,
})


class DbUrlError(ValueError):
    """``str()``: the rule broken, never the URL's secret parts."""


@dataclass(frozen=True)
class DbUrl:
    text: str  # as given (it holds no password: checked)
    role: str | None
    host: str | None
    port: int | None
    dbname: str | None
    waits: tuple[tuple[str, int], ...] = ()  # the WAITS the URL sets (checked)

    def libpq_waits(self) -> dict[str, int]:
        """Every one of libpq's waits: the URL's, else walletctl's default."""
        return {**{name: rule[0] for name, rule in WAITS.items()}, **dict(self.waits)}

    def display(self) -> str:
        """The server as messages name it: ``postgresql://ROLE@HOST:PORT/DB``."""
        role = f"{self.role}@" if self.role else ""
        port = f":{self.port}" if self.port else ""
        return f"postgresql://{role}{self.host or 'localhost'}{port}/{self.dbname or ''}"


def parse_db_url(text: str) -> DbUrl:
    value = text.strip()
    parts, port = _split(value)
    params = _params(parts)
    waits = tuple((name, _bounded(name, params[name])) for name in WAITS if name in params)
    if parts.fragment:
        raise DbUrlError("must not have a #fragment")
    dbname = unquote(parts.path.lstrip("/")) or params.get("dbname")
    if not dbname and "service" not in params:
        raise DbUrlError("must name a database: postgresql://ROLE@HOST:5432/DB")
    if port is None and params.get("port", "").isdigit():
        port = int(params["port"])
    return DbUrl(text=value, role=unquote(parts.username) if parts.username else
                 params.get("user"), host=parts.hostname or params.get("host"),
                 port=port, dbname=dbname, waits=waits)


def _split(value: str) -> tuple[SplitResult, int | None]:
    """The URL's parts and port: printable, a port in range, PostgreSQL's scheme."""
    if not value.isprintable() or not value.isascii() or len(value) > 1000:
        raise DbUrlError("must be a printable ASCII URL of at most 1000 characters")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise DbUrlError("must be a URL such as postgresql://ROLE@HOST:5432/DB "
                         "(the port a number from 1 to 65535)") from None
    if parts.scheme not in SCHEMES:
        raise DbUrlError("must start with postgresql:// (a PostgreSQL server; the local "
                         "file is [history] path)")
    return parts, port


def _params(parts: SplitResult) -> dict[str, str]:
    """The URL's query parameters: no password, none walletctl does not pass on."""
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if parts.password is not None or "password" in params:
        raise DbUrlError("must not contain a password: put it in ~/.pgpass, PGPASSWORD or "
                         "a service file (libpq reads them)")
    unknown = sorted(set(params) - ALLOWED_PARAMS)
    if unknown:
        raise DbUrlError(f"parameter {unknown[0][:40]!r} is not one walletctl passes on "
                         f"(allowed: {', '.join(sorted(ALLOWED_PARAMS))})")
    return params


def _bounded(name: str, value: str) -> int:
    _default, low, high, unit = WAITS[name]
    number = int(value) if value.isdigit() and len(value) < 10 else None
    if number is None or not low <= number <= high:
        rule = f"must be {low}" if low == high else (
            f"must be a whole number from {low} to {high}{unit}")
        raise DbUrlError(f"parameter {name}={value[:20]!r}: {rule} (walletctl's waits are "
                         "bounded: see docs/history.md, Bounded waits)")
    return number
