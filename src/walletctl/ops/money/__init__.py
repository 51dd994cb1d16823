"""The money protocol: every money movement, single command or batch row (docs/money.md).

* :mod:`.lock`       — one lock per original (merchant, store, reference) on this machine
* :mod:`.earlier`    — earlier unknown intents judged against the gateway's records
* :mod:`.duplicates` — the likely-duplicate hold
* :mod:`.followup`   — one capture/refund/reversal through the steps, in order
* :mod:`.checkout`   — one checkout

What an answer proves is :mod:`walletctl.models.outcome`; the history's identity of an
intent is :mod:`walletctl.history.store`.
"""
