"""The one way tests wait for something: poll a condition until it holds or a deadline passes.

A fixed sleep either wastes time or, on a loaded machine, is too short; polling an observable
condition does neither. `wait_until` and `wait_until_async` share the same rule.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class NotReached(AssertionError):
    pass


def wait_until(condition: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.05,
               what: str = "condition") -> T:
    """`condition()`'s first truthy value, polled every `interval` s; NotReached after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise NotReached(f"{what} not reached within {timeout} s")
        time.sleep(interval)


async def wait_until_async(condition: Callable[[], T | Awaitable[T]], *, timeout: float = 30.0,
                           interval: float = 0.02, what: str = "condition") -> T:
    """As `wait_until`, inside an event loop (`condition` may be a coroutine function)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise NotReached(f"{what} not reached within {timeout} s")
        await asyncio.sleep(interval)
