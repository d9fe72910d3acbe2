"""Python's cyclic collector in vaultd's long-lived processes (the server, the embedded
database's server): what the imports and the start made lives as long as the process, so it is
frozen out of every later pass.

A full (generation 2) pass walks every object the process holds and stops everything it runs
meanwhile: 40-51 ms in vaultd's process at rest (its 76,000 objects, most of them modules',
classes and functions), 40-63 ms in the database's server. Such a pass comes once the objects
promoted since the last one reach a quarter of those it kept, so under load every few minutes,
and the requests or commands in progress wait for it. Once frozen (`gc.freeze`), a full pass
walks only what was made since: about 1 ms (docs/performance-records.md, "The collector's pauses").
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Everything made so far, once its garbage is gone, out of every later pass."""
    gc.collect()
    gc.freeze()
