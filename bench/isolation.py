"""Another account's pages beside a heavy tenant, by fair share: `python -m bench.isolation
[--runs N] [--shares 1 0.5 0.25]`.

Each run starts a vaultd (one render worker) with `server.fair_share` set, and measures what
tests/test_scale_isolation.py does (`tests.isolation_run`): the bystander's page p95 at rest,
then beside an account revoking 2,501 links and reading its log, listing, account and
analytics in a loop (300 pages and 5 s at least in each phase, the heavy tenant's process
started and connected before the second). Prints, per share, each run's p95 ratio (goal: at
most 2), medians and the heavy phase's length in pages. About 20 s a run; judge on an
otherwise idle machine, or with a known load beside it, in a tree whose render kernels are
built (`bench/__init__.py` warns otherwise).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from tests.isolation_run import PROXY, measure, p95
from tests.vault_process import VaultProcess


def one_run(share: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        server = VaultProcess(Path(folder) / "data",
                              env={"VAULTD_RENDER_WORKERS": "1", "VAULTD_FAIR_SHARE": share,
                                   **PROXY})
        server.start()
        try:
            run = measure(server)
        finally:
            server.stop()
    rest, busy = p95(run.at_rest), p95(run.busy)
    medians = statistics.median(run.at_rest) * 1000, statistics.median(run.busy) * 1000
    return (f"fair_share {share}: p95 {rest * 1000:.1f} ms at rest, {busy * 1000:.1f} ms beside"
            f" the heavy tenant: {busy / rest:.2f}x; median {medians[0]:.1f} -> {medians[1]:.1f}"
            f" ms; worst {max(run.busy) * 1000:.0f} ms; {len(run.busy)} pages beside")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--shares", nargs="+", default=["1", "0.25"])
    args = parser.parse_args()
    for _ in range(args.runs):
        for share in args.shares:
            print(one_run(share), flush=True)


if __name__ == "__main__":
    main()
