"""What the vaultd process holds: its RSS (and smaps_rollup) at rest, the heavy libraries mapped
in it and in a render worker, and its growth under four concurrent 20 MB uploads, three times.

    .venv/bin/python -m bench.memory      # about 50 s on the 2-core machine

docs/performance-records.md (*The server's memory*) has the figures and what they led to.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench import corpus, transfer
from bench.server import Vault, rss_kib
from tests.processes import render_workers

LIBRARIES = ("numpy", "scipy", "PIL", "pypdfium2")


def rollup(pid: int) -> dict[str, int]:
    """/proc/PID/smaps_rollup in KiB: Rss, Pss, Private_Dirty (the process's own), ..."""
    lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    return {line.split(":")[0]: int(line.split()[1]) for line in lines}


def libraries(pid: int) -> list[str]:
    """Which of LIBRARIES have a file mapped in the process."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return [name for name in LIBRARIES if f"/site-packages/{name}/" in maps]


def main() -> None:
    data = corpus.image_heavy_pdf().data
    with tempfile.TemporaryDirectory() as work:
        vault = Vault(Path(work)).start()
        try:
            client = vault.client()
            transfer.upload_speeds(vault, client, data, 0)  # one untimed upload: a warm server
            client.close()
            at_rest = rollup(vault.pid)
            print(f"vaultd at rest: RSS {at_rest['Rss'] / 1024:.1f} MiB, private dirty "
                  f"{at_rest['Private_Dirty'] / 1024:.1f} MiB, shared clean "
                  f"{at_rest['Shared_Clean'] / 1024:.1f} MiB")
            print(f"libraries mapped in vaultd: {', '.join(libraries(vault.pid)) or 'none'}")
            workers = render_workers(vault.pid)
            if workers:
                print(f"libraries mapped in a render worker: {', '.join(libraries(workers[0]))}")
            for turn in range(3):
                memory = transfer.concurrent_upload_memory(vault, data)
                print(f"4 concurrent {len(data) / 1e6:.0f} MB uploads, round {turn + 1}: "
                      f"{memory.idle_kib / 1024:.1f} -> {memory.peak_kib / 1024:.1f} MiB "
                      f"(+{(memory.peak_kib - memory.idle_kib) * 1024 / 1e6:.1f} MB), "
                      f"{memory.uploads_ok}/4 stored, peak from {memory.peak_from}")
            print(f"vaultd after: RSS {rss_kib(vault.pid) / 1024:.1f} MiB")
        finally:
            vault.stop()


if __name__ == "__main__":
    main()
