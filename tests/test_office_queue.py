"""The Office conversion slot's order, in process (the HTTP measurement is
tests/test_office_fairness.py): accounts take turns, one account's queue lets another's next
conversion in after the one running, each account's share and the queue are capped with 429,
and a cancelled wait leaves nothing behind."""

from __future__ import annotations

import asyncio

import pytest

from vaultd.errors import TooManyRequests
from vaultd.services.files.office_queue import ACCOUNT_BUSY, BUSY, FairSlot


async def _convert(slot: FairSlot, account: str, name: str, order: list[str],
                   release: asyncio.Event) -> None:
    async with slot.turn(account):
        order.append(name)
        await release.wait()
        release.clear()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _run_in_turns(slot: FairSlot, jobs: list[tuple[str, str]]) -> list[str]:
    order: list[str] = []
    release = asyncio.Event()
    tasks = []
    for account, name in jobs:
        tasks.append(asyncio.create_task(_convert(slot, account, name, order, release)))
        await _settle()
    while len(order) < len(jobs) or not all(task.done() for task in tasks):
        release.set()
        await _settle()
    return order


def test_another_account_goes_next_whatever_the_first_has_queued() -> None:
    slot = FairSlot(max_waiting=10, per_account=10)
    jobs = [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1"), ("b", "b2")]
    assert asyncio.run(_run_in_turns(slot, jobs)) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_an_account_whose_conversion_just_ran_goes_behind_one_that_waits() -> None:
    slot = FairSlot(max_waiting=10, per_account=10)
    # a2 is queued before b1 arrives, but a has just had the slot: b1 first.
    assert asyncio.run(_run_in_turns(slot, [("a", "a1"), ("a", "a2"), ("b", "b1")])) == [
        "a1", "b1", "a2"]


def test_an_accounts_share_and_the_queue_are_capped() -> None:
    async def scenario() -> tuple[str, str, int]:
        slot = FairSlot(max_waiting=2, per_account=2)
        order: list[str] = []
        release = asyncio.Event()
        held = [asyncio.create_task(_convert(slot, account, account, order, release))
                for account in ("a", "a", "b", "c")[:3]]
        await _settle()
        with pytest.raises(TooManyRequests) as mine:
            async with slot.turn("a"):
                pass
        held.append(asyncio.create_task(_convert(slot, "c", "c", order, release)))
        await _settle()
        with pytest.raises(TooManyRequests) as full:
            async with slot.turn("d"):
                pass
        waiting = slot.waiting
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
        assert slot.waiting == 0
        async with slot.turn("d"):  # everything cancelled: the slot is free again
            pass
        assert mine.value.retry_after == 10 and full.value.retry_after == 10
        return mine.value.message, full.value.message, waiting

    mine, full, waiting = asyncio.run(scenario())
    assert mine == ACCOUNT_BUSY == ("this account already has 2 Office documents converting or "
                                    "waiting; retry when one is done")
    assert full == BUSY == "the Office converter is busy; retry shortly"
    assert waiting == 2


def test_a_wait_cancelled_as_the_slot_is_handed_over_passes_it_on() -> None:
    async def scenario() -> list[str]:
        slot = FairSlot(max_waiting=10, per_account=10)
        order: list[str] = []
        release = asyncio.Event()
        first = asyncio.create_task(_convert(slot, "a", "a1", order, release))
        await _settle()
        second = asyncio.create_task(_convert(slot, "b", "b1", order, release))
        third = asyncio.create_task(_convert(slot, "c", "c1", order, release))
        await _settle()
        release.set()
        await asyncio.sleep(0)  # a1 leaves and hands the slot to b1, which has not run yet
        second.cancel()
        await _settle()
        release.set()
        await asyncio.gather(first, second, third, return_exceptions=True)
        return order

    assert asyncio.run(scenario()) == ["a1", "c1"]
