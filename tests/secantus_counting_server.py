"""vaultd's SecantusDB server (`vaultd.secantus_server`) counting its index-catalog reads from
WiredTiger: every read appends a line to `<storage>/catalog_reads`. With `COUNTING_MODE` set to
`index-choice-only` it runs with vaultd's index choice alone, without the catalog read once per
command: the yardstick `tests/test_secantus_catalog.py` counts against."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from secantus import storage
from secantus.cli import main

from vaultd import secantus_server

COUNTING_MODE = "COUNTING_MODE"
INDEX_CHOICE_ONLY = "index-choice-only"
READS_FILE = "catalog_reads"


def _counted(read: Callable[..., Any], reads: Path) -> Callable[..., Any]:
    @functools.wraps(read)
    def count(*args: Any, **kwargs: Any) -> Any:
        with reads.open("a") as log:
            log.write("read\n")
        return read(*args, **kwargs)

    return count


def run() -> None:
    reads = Path(sys.argv[sys.argv.index("--storage-path") + 1]) / READS_FILE
    # Both ways WiredTiger's catalog is read: SecantusDB's own walk, and vaultd's walk that
    # keeps the records for the rest of the command.
    storage.Storage._iter_indexes = _counted(storage.Storage._iter_indexes, reads)
    secantus_server._raw_index_records = _counted(secantus_server._raw_index_records, reads)
    if os.environ.get(COUNTING_MODE) == INDEX_CHOICE_ONLY:
        secantus_server.install_index_choice()
    else:
        secantus_server.install()
    sys.argv[0] = "secantus"
    raise SystemExit(main())


if __name__ == "__main__":
    run()
