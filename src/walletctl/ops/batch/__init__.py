"""Batch captures, refunds and reversals that never move money twice.

* :mod:`.rows`    — streamed CSV / JSON Lines input and per-row validation
* :mod:`.journal` — the SQLite (WAL) write-ahead journal and deterministic references
* :mod:`.plan`    — pass 1: validate everything, record the plan (nothing sent)
* :mod:`.flow`    — token bucket, Retry-After, circuit breaker; flow options, early-stop exit
* :mod:`.outcome` — run options, per-row results, the run report; building a row's request
* :mod:`.control` — the gateway protocol, the runner's control exceptions, the retry loop
* :mod:`.runner`  — pass 2: the async runner (direct or lookup-first rows, lookup before retry)
* :mod:`.driver`  — pass 2 driven: its event loop, gateway clients, history recorder, signals
* :mod:`.job`     — ``capture|refund|reverse --batch`` from the options to the result: plan,
  the desk's rules, four eyes, confirmations, run or dry run, exit code
* :mod:`.lookup`  — ``lookup --batch`` balance reports on the same flow control
* :mod:`.results` — per-row NDJSON / CSV results

See docs/batch.md for the behaviour and the exit codes.
"""
