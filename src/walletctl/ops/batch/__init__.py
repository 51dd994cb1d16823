"""Batch captures, refunds and reversals that never move money twice.

* :mod:`.input_rows` — streamed CSV / JSON Lines input (bounded lines), per-row validation
* :mod:`.journal` — the SQLite (WAL) write-ahead journal, deterministic references, and
  pass 1: validate everything, record the plan (nothing sent)
* :mod:`.flow` — token bucket, Retry-After, circuit breaker, signals; flow options, exit
* :mod:`.runner` — pass 2: the async runner (direct or lookup-first rows, lookup before
  retry, group commit, the one writer of a row's journal and history records), its options,
  per-row results and report, a row's request
* :mod:`.driver` — pass 2 driven: its event loop, gateway clients, the history recorder,
  the ``--results`` file
* :mod:`.job` — ``capture|refund|reverse --batch`` from the options to the result: plan,
  the desk's rules, four eyes, confirmations, run or dry run, exit code
* :mod:`.balance_report` — ``lookup --batch`` balance reports on the same flow control

See docs/batch.md for the behaviour and the exit codes.
"""
