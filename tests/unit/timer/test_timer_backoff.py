"""ExponentialBackoff: the geometric growth, the cap, the jitter's spread, the checks."""

from __future__ import annotations

import pytest

from timer.backoff import ExponentialBackoff


def test_the_wait_doubles_from_the_initial_value_up_to_the_cap() -> None:
    backoff = ExponentialBackoff(0.1, 1.0, jitter=0)
    assert [backoff.delay_s(n) for n in range(1, 7)] == pytest.approx(
        [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    )
    assert backoff.delay_s(10_000) == 1.0  # far past the cap: no overflow


def test_jitter_spreads_the_capped_wait_twenty_percent_either_way() -> None:
    backoff = ExponentialBackoff(0.1, 1.0)
    assert backoff.delay_s(1, rand=lambda: 0.0) == pytest.approx(0.08)
    assert backoff.delay_s(1, rand=lambda: 0.5) == pytest.approx(0.1)
    assert backoff.delay_s(50, rand=lambda: 0.999999) == pytest.approx(1.2, rel=1e-5)


def test_multiplier_one_is_a_constant_backoff() -> None:
    backoff = ExponentialBackoff(5.0, 5.0, multiplier=1, jitter=0)
    assert {backoff.delay_s(n) for n in range(1, 5)} == {5.0}


@pytest.mark.parametrize(
    ("initial", "maximum", "multiplier", "jitter"),
    [(-1, 1, 2, 0), (2, 1, 2, 0), (1, 2, 0.5, 0), (1, 2, 2, 1.0)],
)
def test_nonsense_settings_are_refused(
    initial: float, maximum: float, multiplier: float, jitter: float
) -> None:
    with pytest.raises(ValueError):
        ExponentialBackoff(initial, maximum, multiplier, jitter)
