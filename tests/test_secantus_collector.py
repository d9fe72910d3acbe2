"""The embedded database's server (`vaultd.secantus_server`) settles Python's collector before
it serves: what was made until then is frozen out of every later pass. Checked in this
process, then its collector put back as it was."""

from __future__ import annotations

import gc

from vaultd import secantus_server


def test_the_objects_made_before_serving_are_frozen_out_of_the_collectors_passes() -> None:
    kept = [object() for _ in range(1000)]
    try:
        secantus_server.settle_collector()
        assert gc.get_freeze_count() >= len(kept)
        assert [one for one in gc.get_objects(2) if one is kept] == []  # frozen: in no generation
    finally:
        gc.unfreeze()
