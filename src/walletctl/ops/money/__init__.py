"""The money protocol: every money movement, single command or batch row (docs/money.md).

* :mod:`.pipeline`   — ONE function (``move``) runs the steps of every single movement
* :mod:`.movements`  — what each operation brings: its plan, request and answer's meaning
* :mod:`.lock`       — one lock per original (merchant, store, reference): machine and desk
* :mod:`.earlier`    — earlier unknown intents judged against the gateway's records
* :mod:`.duplicates` — the likely-duplicate hold
* :mod:`.approval`   — four eyes: filing, checking and spending a second operator's approval

What an answer proves is :mod:`walletctl.models.outcome`; the history's identity of an
intent is :mod:`walletctl.history.store`.
"""
