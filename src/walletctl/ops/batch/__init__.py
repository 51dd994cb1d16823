"""Batch captures, refunds and reversals that never move money twice (docs/batch.md).

:mod:`.input_rows` reads and validates the rows; :mod:`.journal` is the write-ahead journal and
pass 1, the plan; :mod:`.runner` is pass 2, the async runner, on the flow control of
:mod:`.flow`; :mod:`.driver` drives it (event loop, clients, the history, ``--results``);
:mod:`.job` is a command from its options to its result; :mod:`.balance_report` is
``lookup --batch`` on the same flow control.
"""
