"""Batch captures, refunds and reversals that never move money twice.

* :mod:`.rows`    — streamed CSV / JSON Lines input and per-row validation
* :mod:`.journal` — the SQLite (WAL) write-ahead journal and deterministic references
* :mod:`.plan`    — pass 1: validate everything, record the plan (nothing sent)
* :mod:`.flow`    — token bucket, Retry-After, circuit breaker
* :mod:`.runner`  — pass 2: the async runner (lookup before retry, pre-flight rules)
* :mod:`.results` — per-row NDJSON / CSV results

See docs/batch.md for the behaviour and the exit codes.
"""
