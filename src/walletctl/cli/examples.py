"""Examples shown at the end of the money commands' ``--help`` (and in the man page).

Set on the commands when they are loaded (cli/registry.py ``load_command``), so they stay beside
each other here; tests/project/test_help_examples.py parses every example with the real
command and checks the help fits 80 columns.
"""

from __future__ import annotations

from typing import Final

# command -> ((what it does, the command line), ...): two or three each, lines <= 76 chars.
EXAMPLES: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "checkout": (
        ("a sale; prints the redirect URL for the customer",
         "walletctl -p sandbox checkout --amount 12.34 --ref ORDER-1001"),
        ("a pre-authorisation, opened in the browser",
         "walletctl checkout --amount 50 --type preauth --ref ORDER-1002 --open"),
        ("the exact request from a JSON file, sending nothing",
         "walletctl checkout --from-file order.json --dry-run"),
    ),
    "capture": (
        ("capture all that remains of an approved pre-authorisation",
         "walletctl capture ORDER-1002"),
        ("capture part of it, saying why",
         "walletctl capture ORDER-1002 --amount 20.00 --reason 'first parcel'"),
        ("a batch: check every row first, then send",
         "walletctl capture --batch captures.csv --dry-run"),
    ),
    "refund": (
        ("refund part of a sale (asks first on a terminal)",
         "walletctl refund ORDER-1001 --amount 5.00 --reason 'damaged item'"),
        ("refund all still refundable, without the question",
         "walletctl refund ORDER-1001 --yes"),
        ("a batch, with one result per row",
         "walletctl refund --batch refunds.csv --yes --results refunds.ndjson"),
    ),
    "reverse": (
        ("release an uncaptured pre-authorisation",
         "walletctl reverse ORDER-1002 --yes"),
        ("show the exact request, sending nothing",
         "walletctl reverse ORDER-1002 --dry-run"),
        ("a batch of reversals (CSV or JSONL rows), journaled and resumable",
         "walletctl reverse --batch stale.csv --yes"),
    ),
    "lookup": (
        ("the transaction and its follow-ups as a table",
         "walletctl lookup ORDER-1001"),
        ("the same as JSON, for a script",
         "walletctl lookup ORDER-1001 -o json"),
        ("pre-authorisations older than 6 days with something left to capture",
         "walletctl lookup --batch orders.csv --open --older-than 6d"),
    ),
    "authorize": (
        ("charge the account a browser wallet posted (event.detail JSON)",
         "walletctl authorize --event event.json --amount 12.34"),
        ("a pre-authorisation, the event read from stdin",
         "walletctl authorize --event - --amount 50 --type preauth < event.json"),
        ("show the exact request, sending nothing",
         "walletctl authorize --event event.json --amount 12.34 --dry-run"),
    ),
}


def epilog(command: str) -> str | None:
    """The ``--help`` epilog of ``command`` (click keeps a ``\\b`` paragraph as written)."""
    examples = EXAMPLES.get(command)
    if not examples:
        return None
    lines = ["\b", "Examples:"]
    for what, line in examples:
        lines += [f"  # {what}", f"  {line}"]
    return "\n".join(lines)
