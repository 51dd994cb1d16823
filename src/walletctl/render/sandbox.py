"""Rendering of ``walletctl sandbox`` results that are not transactions."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from walletctl.models.money import format_major
from walletctl.render.console import escape, print_message, print_note, wrap_words
from walletctl.render.fit import print_table, terminal_width
from walletctl.render.formats import View, shape, show
from walletctl.render.output import first_rows, flat


def render_ready(ready: dict[str, Any], output: str) -> None:
    """``sandbox wait``: one line for people, one record for scripts."""
    tries = ready["attempts"]
    render_record(ready, output, f"sandbox at {ready['url']} is ready (waited "
                  f"{ready['waitedSeconds']:.2f} s, {tries} attempt{'s' if tries != 1 else ''})")


# -- headless control: approve/decline/cancel, reset, ledger, values (every --output) ------

LEDGER_COLUMNS = ("reference", "invoiceReference", "kind", "amount", "currency", "state",
                  "providerStateCode", "merchantId", "storeId")


def render_record(data: dict[str, Any], output: str, line: str) -> None:
    """One result object: a line for people; JSON, one NDJSON line, or a CSV row (scalars)."""
    _record(data, output, lambda: print_message(line))


def _record(data: dict[str, Any], output: str, table: Callable[[], None]) -> None:
    """One result object (a flat format's row with nested keys dotted)."""
    show(View(rows=[data], flat=[flat(data)], document=data, table=table), output)


def render_three_ds(data: dict[str, Any], output: str) -> None:
    """``sandbox 3ds``: people get one line without the authentication value (it is what
    authorizes the payment); JSON/NDJSON/CSV carry it for ``authorize --3ds``."""
    passed = data.get("transStatus") == "Y"
    line = (f"3DS {'passed' if passed else 'failed'} for {data.get('transactionAccountId')}: "
            f"transStatus {data.get('transStatus')}, eci {data.get('eci')}, threeDSServerTransId "
            f"{data.get('threeDSServerTransId')} (for authorize: -o json | walletctl authorize "
            "--3ds -)")
    render_record(data, output, line)


def render_decision(data: dict[str, Any], output: str, ref: str,
                    amount_format: Callable[[], str]) -> None:
    """``sandbox approve|decline|cancel``: one line for people; for scripts the answer with
    its transaction record as ``lookup`` shows it (``amount_format``: the record's, asked
    for the data formats only)."""
    line = (f"{data.get('reference', ref)}: {data.get('state')} "
            f"({data.get('providerStateCode')}) -> {data.get('redirectUrl')}")
    if shape(output) != "table":
        data = _with_major_amount(data, amount_format())
    render_record(data, output, line)


def render_demo(run: Callable[..., str | None], output: str | None) -> str | None:
    """``sandbox demo``: ``run(out, ...)`` writes the transcript as it goes (a table) or
    whole at the end (a data format); the failed step, if any."""
    if output is None or shape(output) == "table":
        width = terminal_width()
        return run(sys.stdout, width=width, fit=lambda text: wrap_words(text, width))
    import io

    buffer = io.StringIO()
    failed = run(buffer)
    render_record({"transcript": buffer.getvalue().splitlines(), "failed": failed}, output, "")
    return failed


def _with_major_amount(data: dict[str, Any], amount_format: str) -> dict[str, Any]:
    """The sandbox's answer with its transaction record as ``lookup`` shows it (major units)."""
    record = data.get("record")
    if not isinstance(record, dict):
        return data
    from walletctl.models.records import parse_records
    from walletctl.render.records import record_dict

    try:
        parsed = parse_records(record, "decimal" if amount_format == "decimal" else "minor")
    except Exception:  # an unexpected shape: show what the sandbox said
        return data
    return {**data, "record": record_dict(parsed[0])} if parsed else data


LEDGER_TABLE_ROWS = 200  # transactions a table shows (every one is in the data formats)


def render_ledger(transactions: Iterable[dict[str, Any]], output: str, url: str) -> None:
    """``sandbox ledger``: the data formats streamed; a table shows the first
    :data:`LEDGER_TABLE_ROWS` and counts the rest."""
    show(View(rows=transactions, columns=LEDGER_COLUMNS, key="transactions",
              members=lambda count: {"count": count},
              table=lambda: _ledger_table(transactions, url)), output)


def _ledger_table(transactions: Iterable[dict[str, Any]], url: str) -> None:
    shown, count = first_rows(transactions, LEDGER_TABLE_ROWS)
    headers = ["Reference", "Of", "Kind", "Amount", "State", "Provider state", "Merchant",
               "Store"]
    print_table(f"Sandbox ledger at {escape(url)} ({count} transactions)", headers,
                [_ledger_row(t) for t in shown], justify={3: "right"}, no_wrap=(0, 3),
                drop=(6, 7, 5, 1))
    if count > len(shown):
        print_note(f"showing the first {len(shown)} of {count} transactions: -o csv, "
                   "-o ndjson or -o json for all")


def _ledger_row(t: dict[str, Any]) -> list[str]:
    def text(key: str) -> str:
        return escape(str(t.get(key) or ""))

    amount, currency = str(t.get("amount") or ""), str(t.get("currency") or "")
    try:
        amount_shown = format_major(Decimal(amount), currency)
    except Exception:
        amount_shown = f"{amount} {currency}".strip()
    return [text("reference"), text("invoiceReference"), text("kind"), amount_shown,
            text("state"), text("providerStateCode"), text("merchantId"), text("storeId")]


def render_values(magic: dict[str, str], output: str, *, api_key: str,
                  service_secret: str) -> None:
    """``sandbox values``; the credentials are the sandbox's documented test values."""
    faults = ("latency=50;jitter=10;error-rate=0.2;status=503;throttle-rate=0.1;retry-after=1;"
              "drop-rate=0.05;error-after-rate=0;seed=7")
    rows = [{"lastTwoDigits": digits, "outcome": text} for digits, text in magic.items()]
    rows.append({"lastTwoDigits": "other", "outcome": "approved normally"})
    document = {
        "magicAmounts": rows,
        # The sandbox's documented test credentials (not secrets: every sandbox has them).
        "credentials": {"authorization": f"PublicApiKey {api_key}",
                        "publicKeyService": f"Basic <userId>:{service_secret}"},
        "faultHeader": f"X-Sandbox-Fault: {faults}",
    }

    def table() -> None:
        print_message("Magic amounts (last two digits of the checkout amount in minor "
                      "units):")
        for row in rows:
            # an outcome wider than the terminal continues under itself
            print_message(f"  ..{row['lastTwoDigits']:<5}  {row['outcome']}"
                          if row["lastTwoDigits"] != "other"
                          else f"  {'other':<7}  {row['outcome']}", indent=" " * 11)
        print_message(f"\nCredentials: Authorization: PublicApiKey {api_key} (any "
                      f"merchant); public key service Basic <userId>:{service_secret}.")
        print_message(f"Faults: X-Sandbox-Fault: {faults}")

    show(View(rows=rows, document=document, table=table), output)


# The sandbox's fault settings (the JSON names of its faults route), in display order.
FAULT_FIELDS = ("latency_ms", "jitter_ms", "error_rate", "error_status", "throttle_rate",
                "retry_after", "drop_rate", "error_after_rate", "seed")
_FAULT_UNITS = {"latency_ms": " ms", "jitter_ms": " ms", "retry_after": " s"}


def render_faults(data: dict[str, Any], output: str, url: str) -> None:
    """``sandbox faults``: the faults in force, one setting per line (defaults left out)."""
    _record(data, output, lambda: _faults(data, url))


def _faults(data: dict[str, Any], url: str) -> None:
    rates = ("error_rate", "throttle_rate", "drop_rate", "error_after_rate")
    active = any(data.get(k) for k in (*rates, "latency_ms", "jitter_ms"))
    if not active:
        print_message(f"no faults at {url}: /api/v5 requests are answered normally")
        return
    lines = [f"faults at {url} (on /api/v5 requests):"]
    for key in FAULT_FIELDS:
        value = data.get(key)
        if value in (None, 0, 0.0):
            continue
        lines.append(f"  {key:<16} {value}{_FAULT_UNITS.get(key, '')}")
    print_message("\n".join(lines), indent=" " * 19)


def render_seed(record: dict[str, Any], output: str, *, next_step: str) -> None:
    """``sandbox seed``: what was created, where the CSV is, and the batch to run next."""
    what = "pre-authorisations" if record["kind"] == "preauth" else "sales"
    total = format_major(Decimal(record["total"]), record["currency"])
    line = (f"{record['created']} approved {what} ({total}, {record['first']} .. "
            f"{record['last']}) in the sandbox at {record['url']}")
    if record["csv"] == "-":  # stdout holds the CSV
        print_note(line)
        return
    render_record(record, output, line)
    print_note(f"next: `{next_step}`")
