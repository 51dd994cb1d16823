"""The money protocol: every money movement, single command or batch row, through
:func:`.pipeline.move`'s steps (docs/money.md names each module's part).
"""
