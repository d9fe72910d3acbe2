"""A file's lapsed links are listed expired in the background a few a step
(`services.links.link_states`), and a step takes its links from those pending in constant time:
100,000 links lapsed together once cost every step a sort of all of them, about 60 ms of the
event loop that every other request waited behind, 20,000 times. On the test worker's shared
SecantusDB.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from tests import recorded_database
from vaultd.db import Db
from vaultd.services.common import background
from vaultd.services.links import link_states

recorder, db = recorded_database.recorder, recorded_database.worker_db  # this module's fixtures
PENDING = 300_000  # a sort of them takes about 0.3 s of a core
STEPS = 10


async def test_a_step_takes_its_links_in_constant_time_whatever_is_pending(db: Db) -> None:
    file_id = str(uuid.uuid4())
    # Ids of no record: each step's write finds nothing, and the test measures the choosing.
    link_states._mark_in_background(db, file_id, [str(uuid.uuid4()) for _ in range(PENDING)])
    pending = link_states._marking[file_id]
    held: list[float] = []  # the event loop's CPU between two turns of this task
    last = time.thread_time()  # CPU, not the wall: a descheduled process holds no loop
    while len(pending) > PENDING - STEPS * link_states.WRITE_BATCH:
        await asyncio.sleep(0)
        now = time.thread_time()
        held.append(now - last)
        last = now
    pending.clear()  # the marking stops at its next step
    await background.settled()
    assert file_id not in link_states._marking
    assert max(held) < 0.05, f"the loop was held {max(held) * 1000:.0f} ms at once"
