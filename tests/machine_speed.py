"""How much slower the machine under test runs than the one an absolute time bound was set on.

A few bounds are absolute by nature ("no page waits a second"): they were measured on the
2-core development machine, whose `bench.leakmark_misses.yardstick` (CPU seconds of a fixed
NumPy and Pillow workload) took 0.072-0.086 s when quiet. The same machine, moved to slower
hosts, has measured 0.25-0.31 s quiet, and every time in the suite stretched by about as much.
Such a bound is multiplied by `slowdown()`, never divided: a faster machine keeps the bound as
set, a slower one gets it stretched by what its own yardstick shows in the same run.
"""

from __future__ import annotations

from functools import cache

from bench.leakmark_misses import yardstick

REFERENCE_YARDSTICK = 0.086  # seconds, the development machine's slowest quiet measurement


@cache
def slowdown() -> float:
    """This machine's yardstick over the reference's, at least 1 (measured once a process)."""
    return max(1.0, yardstick() / REFERENCE_YARDSTICK)
