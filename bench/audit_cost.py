"""What the audit log costs a page: same-page pairs of a vaultd with it against one without.

    python -m bench.audit_cost                # 30 rounds of the small corpus PDF's 2 pages
    python -m bench.audit_cost --rounds 60

Two fresh vaultd as deployed; the reference has `audit.enabled` off (no sequencer: nothing
reads the access log by time, nothing writes the tree). The page path is the same code on
both (its log insert is one command either way, tests/test_page_commands.py): what differs is
the sequencer's work on the same cores and database, and the `at` index each insert keeps.
The same pages of the same document are asked of both, alternating which goes first, after a
warm-up round; reported: the median over same-page pairs of with-log over without (target
at most 1.02), each side's p50, and CPU per page of each server and its database.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench import corpus
from bench.latency import p50
from bench.server import VIEWER_IP, Client, Vault, children, cpu_seconds

TARGET = 1.02


@dataclass
class Side:
    vault: Vault
    client: Client
    token: str
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])  # server, database

    def page(self, number: int, keep: bool) -> None:
        before = self._cpu()
        reply = self.client.request("GET", f"/views/{self.token}/pages/{number}",
                                    headers={"x-viewer-ip": VIEWER_IP})
        after = self._cpu()
        if reply.status != 200:
            raise RuntimeError(f"page {number}: {reply.status} {reply.body[:200]!r}")
        if keep:
            self.times.append(reply.seconds)
            self.cpu = [total + a - b for total, a, b in zip(self.cpu, after, before, strict=True)]

    def _cpu(self) -> tuple[float, float]:
        database = next(pid for pid, kind in children(self.vault.pid).items()
                        if kind == "database")
        return cpu_seconds(self.vault.pid), cpu_seconds(database)


def measure(work: Path, rounds: int) -> tuple[Side, Side]:
    doc = corpus.small_pdf()
    with_log = Vault(work / "with-log")
    without = Vault(work / "without-log", {"VAULTD_AUDIT_ENABLED": "false"})
    started: list[Vault] = []
    try:
        sides = []
        for vault in (with_log, without):
            started.append(vault.start())
            client = vault.client()
            stored = vault.store(client, doc.data, "audit cost " + doc.name)
            sides.append(Side(vault, client, vault.link(client, stored["id"])))
        pages = list(range(1, doc.pages + 1))
        for turn in range(rounds + 1):  # the first round warms the workers' caches: not kept
            for index, number in enumerate(pages):
                order = sides if (turn + index) % 2 == 0 else sides[::-1]
                for side in order:
                    side.page(number, keep=turn > 0)
        for side in sides:
            side.client.close()
        return sides[0], sides[1]
    finally:
        for vault in started:
            vault.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        with_log, without = measure(Path(work), args.rounds)
    paired = statistics.median(a / b for a, b in zip(with_log.times, without.times, strict=True))
    count = len(with_log.times)
    for name, side in (("with the audit log", with_log), ("without (audit.enabled off)", without)):
        server, database = (seconds / count * 1000 for seconds in side.cpu)
        print(f"{name}: page p50 {p50(side.times) * 1000:.1f} ms; CPU per page server "
              f"{server:.2f} ms, database {database:.2f} ms")
    verdict = "met" if paired <= TARGET else "missed"
    print(f"with over without, median of {count} same-page pairs: {paired:.3f} "
          f"(target <= {TARGET:.2f}: {verdict})")


if __name__ == "__main__":
    main()
