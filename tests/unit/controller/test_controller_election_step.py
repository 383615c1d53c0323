"""The election's decision after reading /controller (controller.election_lifecycle).

The case that matters: /controller naming this broker while it is not the active
controller. That is a win whose end this broker never saw -- the multi-op's answer lost
with the connection, or the failover after it failed half-way -- and it must try again
(the multi-op then adopts the znode of its own session), not wait on it as if another
broker held it: nobody else would elect while the znode lived, and the brokers never
heard of a new controller until this broker's session ended.
"""

from __future__ import annotations

import pytest

from controller.election_lifecycle import ElectionStep, election_step

ME, OTHER = 1, 2


@pytest.mark.parametrize(
    ("current", "is_active", "expected"),
    [
        (None, False, ElectionStep.TRY),  # nobody holds it
        (None, True, ElectionStep.TRY),  # ours went with the session: try again
        (OTHER, False, ElectionStep.FOLLOW),
        (OTHER, True, ElectionStep.FOLLOW),  # (the caller resigns first)
        (ME, True, ElectionStep.STAY),
        (ME, False, ElectionStep.TRY),  # a win of ours we never finished
    ],
)
def test_election_step(current: int | None, is_active: bool, expected: ElectionStep) -> None:
    assert election_step(current, ME, is_active) is expected
