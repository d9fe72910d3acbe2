"""A write's time inside the database, where the server says it.

A background step (`services.common.background.StepSize`) is made smaller when one takes over
25 ms, so that no other request waits long behind one. Timed as the round trip, a loaded
machine's wait for a CPU (vaultd's event loop, the server's thread) counted as the step's own
cost: three quarters of each round trip, which kept a revoke-all's marking at one link a step
while the database spent 9 ms on it (docs/performance-records.md, *The step's clock*). The embedded
SecantusDB as vaultd runs it (`vaultd.secantus_server`) adds to every write's reply the
milliseconds the command spent in the server; a MongoDB tells it only through its profiler or
slow-query log, so there the round trip stands in, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SERVER_MILLIS = "serverMillis"  # the reply's field: the command's milliseconds in the server
TIMED_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify"})


def step_seconds(reply: Mapping[str, Any] | None, round_trip: float) -> float:
    """The server's time for the command whose `reply` this is, in seconds; the `round_trip`
    where the reply says nothing (or more than the round trip, which cannot be)."""
    millis = (reply or {}).get(SERVER_MILLIS)
    if isinstance(millis, int | float) and 0 <= millis / 1000 <= round_trip:
        return float(millis) / 1000
    return round_trip
