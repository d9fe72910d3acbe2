"""The hourly window of `vaultd.services.tracing.trace_rate`: images age out after an hour, and the
Retry-After is the wait until enough have (the clock is the one thing given: an hour cannot
pass in a test)."""

from __future__ import annotations

import pytest

from vaultd.errors import TooManyRequests
from vaultd.services.tracing.trace_rate import TraceRate


def test_images_age_out_of_the_hour() -> None:
    now = [1000.0]
    rate = TraceRate(5, clock=lambda: now[0])
    rate.spend("a", 2)
    now[0] += 600
    rate.spend("a", 3)
    with pytest.raises(TooManyRequests) as refused:
        rate.spend("a", 2)
    # The first 2 leave the window 3000 s from now: then 2 more fit.
    assert refused.value.retry_after == 3000
    assert str(refused.value) == ("too many images traced for this account (at most 5 an "
                                  "hour); retry in 3000 s")
    rate.spend("b", 5)  # another account's hour is its own
    now[0] += 3000
    rate.spend("a", 2)
    with pytest.raises(TooManyRequests):
        rate.spend("a", 1)


def test_more_than_the_hour_allows_at_once_waits_an_hour() -> None:
    rate = TraceRate(3, clock=lambda: 0.0)
    with pytest.raises(TooManyRequests) as refused:
        rate.spend("a", 4)
    assert refused.value.retry_after == 3600
    rate.spend("a", 3)  # the refused request counted nothing
