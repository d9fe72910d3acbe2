"""vaultd's SecantusDB server with its index choice alone, not its catalog read once per command
(`vaultd.secantus_server`): the yardstick `tests/test_secantus_catalog.py` measures against."""

from __future__ import annotations

import sys

from secantus.cli import main

from vaultd.secantus_server import install_index_choice

if __name__ == "__main__":
    install_index_choice()
    sys.argv[0] = "secantus"
    raise SystemExit(main())
