"""The money protocol: every money movement, single command or batch row, through one
sequence of steps (:mod:`.steps`; docs/money.md names each module's part).
"""
