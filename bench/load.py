"""Pages per second at several numbers of concurrent clients.

Each client is a thread with its own keep-alive connection that requests pages back to back.
The levels are measured in short slices, round-robin (1, 2, 4, 8, 16, then again), so that
background load on a shared machine spreads over all of them rather than spoiling one.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from bench.server import Vault

LEVELS = (1, 2, 4, 8, 16)


@dataclass
class Level:
    clients: int
    seconds: float = 0.0
    ok: list[float] = field(default_factory=list)  # latencies of 200 answers
    refused: Counter[int] = field(default_factory=Counter)  # status -> count
    retry_after: set[str] = field(default_factory=set)

    @property
    def pages_per_second(self) -> float:
        return len(self.ok) / self.seconds if self.seconds else 0.0


def _client_loop(vault: Vault, token: str, pages: int, offset: int, stop: float,
                 level: Level, lock: threading.Lock) -> None:
    client = vault.client()
    number = offset
    try:
        while time.perf_counter() < stop:
            reply = client.page(token, number % pages + 1)
            number += 1
            with lock:
                if reply.status == 200:
                    level.ok.append(reply.seconds)
                else:
                    level.refused[reply.status] += 1
                    level.retry_after.add(reply.headers.get("Retry-After", "-"))
            if reply.status == 503:
                time.sleep(0.05)  # a polite client backs off briefly
    finally:
        client.close()


def _slice(vault: Vault, token: str, pages: int, level: Level, seconds: float) -> None:
    lock = threading.Lock()
    started = time.perf_counter()
    stop = started + seconds
    threads = [threading.Thread(target=_client_loop,
                                args=(vault, token, pages, i * 7, stop, level, lock))
               for i in range(level.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Requests still running at `stop` are counted, so the slice lasts until the last answer.
    level.seconds += time.perf_counter() - started


def measure(vault: Vault, token: str, pages: int, seconds_per_level: float,
            rounds: int) -> list[Level]:
    levels = [Level(n) for n in LEVELS]
    for _ in range(rounds):
        for level in levels:
            _slice(vault, token, pages, level, seconds_per_level / rounds)
    return levels
