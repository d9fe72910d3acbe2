"""The fair share's arithmetic on a clock the test moves (services.common.fair_share): who is
held, how long, and when not. Its effect on another account's pages, against a real vaultd, is
tests/test_scale_isolation.py's."""

from __future__ import annotations

import asyncio

from tests.manual_clock import Clock
from vaultd.services.common.fair_share import (
    ACTIVE_SECONDS,
    BURST_SECONDS,
    LONGEST_WAIT_SECONDS,
    MOST_OWN_ADDRESSES,
    OWN_ADDRESS_SECONDS,
    FairShare,
)


def test_an_account_alone_is_never_held() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    for _ in range(5):
        assert share.pause_before("heavy") == 0.0
        share.done("heavy", 0.2)
    share.pages_read("heavy")  # its own readers are not another account's
    assert share.pause_before("heavy") == 0.0


def test_beside_another_accounts_readers_a_call_waits_what_the_last_took() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    share.pages_read("bystander")
    assert share.pause_before("heavy") == 0.0  # nothing taken yet
    share.done("heavy", 0.1)
    assert share.pause_before("heavy") == 0.0  # within the burst
    share.done("heavy", BURST_SECONDS - 0.1 + 0.04)
    assert abs(share.pause_before("heavy") - 0.04) < 1e-9
    clock.now += 0.01
    assert abs(share.pause_before("heavy") - 0.03) < 1e-9  # the pause counts from the call's end
    clock.now += 0.05
    assert share.pause_before("heavy") == 0.0
    assert share.pause_before("bystander") == 0.0  # never held for its own pages


def test_a_smaller_share_is_a_longer_pause() -> None:
    clock = Clock()
    share = FairShare(0.2, clock)
    share.pages_read("bystander")
    share.done("heavy", 0.1)
    assert abs(share.pause_before("heavy") - (0.4 - BURST_SECONDS)) < 1e-9  # 0.1 x (1 / 0.2 - 1)


def test_calls_in_parallel_add_up_to_the_longest_wait_at_most() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    share.pages_read("bystander")
    for _ in range(4):
        share.done("heavy", 0.1)
    assert abs(share.pause_before("heavy") - (0.4 - BURST_SECONDS)) < 1e-9
    for _ in range(10):
        share.done("heavy", 0.3)
    assert share.pause_before("heavy") == LONGEST_WAIT_SECONDS


def test_held_only_while_the_other_accounts_pages_are_read() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    share.pages_read("bystander")
    clock.now += ACTIVE_SECONDS - 0.2
    share.done("heavy", BURST_SECONDS + 0.1)
    assert share.pause_before("heavy") > 0
    clock.now += 0.2  # the reader's last page a second ago: gone
    share.done("heavy", BURST_SECONDS + 0.1)
    assert share.pause_before("heavy") == 0.0


def test_a_share_of_one_holds_nothing() -> None:
    clock = Clock()
    share = FairShare(1.0, clock)
    share.pages_read("bystander")
    share.done("heavy", 0.3)
    assert not share.enabled
    assert share.pause_before("heavy") == 0.0


def test_turn_sleeps_the_pause_and_returns_it() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    share.pages_read("bystander")
    share.done("heavy", BURST_SECONDS + 0.03)

    async def timed() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        pause = await share.turn("heavy")
        return pause, loop.time() - started

    pause, took = asyncio.run(timed())
    assert abs(pause - 0.03) < 1e-9
    assert took >= 0.029, f"turn returned after {took:.3f} s"


def test_what_it_keeps_is_bounded_by_the_accounts_of_the_last_second() -> None:
    clock = Clock()
    share = FairShare(0.5, clock)
    for n in range(500):
        share.pages_read(f"reader-{n}")
        share.done(f"caller-{n}", 0.01)
    clock.now += ACTIVE_SECONDS
    share.pages_read("bystander")
    share.pause_before("heavy")
    assert len(share._read) == 1
    assert len(share._ready) <= 64


def test_a_bulk_jobs_steps_pause_beside_another_accounts_readers() -> None:
    clock = Clock()
    share = FairShare(0.25, clock)

    async def step_took(seconds: float) -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await share.step("heavy", seconds)
        return loop.time() - started

    assert asyncio.run(step_took(0.01)) < 0.01  # no reader: it only yields
    share.pages_read("bystander")
    assert asyncio.run(step_took(0.1)) >= 0.079  # owed (0.01 + 0.1) x (1 / 0.25 - 1), less burst


def test_pages_read_from_the_accounts_own_address_are_its_own_reading() -> None:
    """The lever: an account reading its own link in the hosted viewer, from where its calls
    come from (a member's Preview, a script), would otherwise pace every other account."""
    clock = Clock()
    share = FairShare(0.25, clock)
    share.caller_seen("self", "198.51.100.7")  # its key made the link from there
    share.pages_read("self", "198.51.100.7")  # and read its pages from there
    assert not share.reading_counted("self")
    share.done("heavy", 2.0)
    assert share.pause_before("heavy") == 0.0  # nobody else's reader: not held
    share.pages_read("self", "203.0.113.9")  # a reader elsewhere is another account's reader
    assert share.reading_counted("self")
    assert share.pause_before("heavy") > 0.0


def test_an_address_is_the_accounts_own_for_a_while_and_for_that_account_only() -> None:
    clock = Clock()
    share = FairShare(0.25, clock)
    share.caller_seen("self", "198.51.100.7")
    share.pages_read("other", "198.51.100.7")  # same address, another account's link: counts
    assert share.reading_counted("other")
    clock.now += OWN_ADDRESS_SECONDS
    share.pages_read("self", "198.51.100.7")  # the account has not called from there lately
    assert share.reading_counted("self")


def test_an_account_remembers_its_newest_addresses_only() -> None:
    clock = Clock()
    share = FairShare(0.25, clock)
    for n in range(MOST_OWN_ADDRESSES + 1):
        share.caller_seen("self", f"198.51.100.{n}")
        clock.now += 0.001
    share.pages_read("self", "198.51.100.1")
    assert not share.reading_counted("self")
    share.pages_read("self", "198.51.100.0")  # the oldest was forgotten: a reader again
    assert share.reading_counted("self")


def test_off_it_remembers_no_address() -> None:
    share = FairShare(1.0, Clock())
    share.caller_seen("self", "198.51.100.7")
    share.pages_read("self", "198.51.100.7")
    assert share.reading_counted("self")  # nothing is paced anyway
