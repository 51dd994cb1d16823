"""An outcome the history cannot write is a warning the recorder hands to the command (its
``warn``), never a line it writes itself; the command's own result is unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from walletctl.config.profile import Profile
from walletctl.history.recorder import recording
from walletctl.history.store import StorageError

PROFILE = Profile(name="p", base_url="http://127.0.0.1:9", merchant_id="M", store_id="S",
                  user_id="u")


class Frozen:
    """A store that records the intent and then cannot write the completion."""

    where = "test"

    def begin(self, intent: Any, **_: Any) -> int:
        return 1

    def complete(self, entry: int, completion: Any) -> None:
        raise StorageError("history test: the database stopped answering")

    def close(self) -> None:
        pass


def test_a_lost_completion_goes_to_the_commands_warn(capsys: pytest.CaptureFixture[str]) -> None:
    shown: list[str] = []
    with recording(Frozen(), PROFILE, "refund", "O-1", warn=shown.append) as rec:  # type: ignore[arg-type]
        rec.sending()
        rec.answered("Approved")
    assert len(shown) == 1, shown
    assert shown[0].startswith("could not record the outcome of entry #1 in the history "
                               "(history test: the database stopped answering)"), shown
    assert "history --unknown --reconcile" in shown[0]
    assert capsys.readouterr() == ("", "")  # the recorder itself writes nothing


def _sent_then_failed() -> None:
    with recording(Frozen(), PROFILE, "refund", "O-1") as rec:  # type: ignore[arg-type]
        rec.sending()
        raise ValueError("boom")


def test_without_a_warn_it_is_a_python_warning_and_the_error_still_raises() -> None:
    with pytest.warns(RuntimeWarning, match="could not record the outcome of entry #1"), \
            pytest.raises(ValueError, match="boom"):
        _sent_then_failed()
