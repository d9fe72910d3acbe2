"""The hourly window of `vaultd.services.tracing.trace_rate`: images age out after an hour, and the
Retry-After is the wait until enough have (the clock is the one thing given: an hour cannot
pass in a test)."""

from __future__ import annotations

import pytest

from vaultd.errors import TooManyRequests
from vaultd.services.tracing.trace_rate import MemorySpends, TraceRate


async def test_images_age_out_of_the_hour() -> None:
    now = [1000.0]
    rate = TraceRate(5, MemorySpends(), clock=lambda: now[0])
    await rate.spend("a", 2)
    now[0] += 600
    await rate.spend("a", 3)
    with pytest.raises(TooManyRequests) as refused:
        await rate.spend("a", 2)
    # The first 2 leave the window 3000 s from now: then 2 more fit.
    assert refused.value.retry_after == 3000
    assert str(refused.value) == ("too many images traced for this account (at most 5 an "
                                  "hour); retry in 3000 s")
    await rate.spend("b", 5)  # another account's hour is its own
    now[0] += 3000
    await rate.spend("a", 2)
    with pytest.raises(TooManyRequests):
        await rate.spend("a", 1)


async def test_more_than_the_hour_allows_at_once_waits_an_hour() -> None:
    rate = TraceRate(3, MemorySpends(), clock=lambda: 0.0)
    with pytest.raises(TooManyRequests) as refused:
        await rate.spend("a", 4)
    assert refused.value.retry_after == 3600
    await rate.spend("a", 3)  # the refused request counted nothing


async def test_the_record_stays_small_at_any_rate_and_ages_images_out_no_sooner() -> None:
    now, store = [0.0], MemorySpends()
    rate = TraceRate(100_000, store, clock=lambda: now[0])
    for _ in range(2000):  # one image every 5 s, past the hour
        await rate.spend("a", 1)
        now[0] += 5
    _, spends = await store.read("a")
    assert len(spends) <= 61
    # Merged under the later time: the hour's count is never short of what was traced.
    assert sum(count for _, count in spends) >= 3600 // 5
