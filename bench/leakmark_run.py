"""The leak-tracing mark's cost on a page served over HTTP, with and without it, in one run.

    python -m bench.leakmark_run [--pages 6] [--rounds 4] [--docs 4] [--keep-code] [--placement]

Starts two vaultd exactly as `bench.run` does; the second with `bench/unmarked_site` first on
its PYTHONPATH, which serves pages without the mark (no invisible mark, no trace code; the
strip keeps its layout; with `--keep-code` the trace code is drawn on both, so the figure is
the invisible mark's alone). The same documents go to both; page requests alternate between the
two servers (which one goes first alternates too), so load elsewhere on the machine hits both
alike. Reports, per document, the page p50 of each and the median of the paired ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import corpus
from bench.latency import p50, sample_pages
from bench.server import Client, Vault

UNMARKED_SITE = Path(__file__).resolve().parent / "unmarked_site"


def _vault(work: Path, marked: bool, keep_code: bool = False, placement: bool = False
           ) -> Vault:
    vault = Vault(work)
    vault.process.env["VAULTD_TRACE_PLACEMENT_MARK"] = "true" if placement else "false"
    if not marked:
        root = Path(__file__).resolve().parent.parent
        vault.process.env["PYTHONPATH"] = f"{UNMARKED_SITE}:{root}"
        if keep_code:
            vault.process.env["VAULTD_BENCH_KEEP_TRACE_CODE"] = "1"
    return vault.start()


def _page_ms(client: Client, token: str, number: int) -> float:
    start = time.perf_counter()
    reply = client.page(token, number)
    if reply.status != 200:
        raise RuntimeError(f"page {number}: {reply.status} {reply.body[:200]!r}")
    return (time.perf_counter() - start) * 1e3


def _check_switch(clients: list[Client], tokens: list[str]) -> None:
    """The marked server's page traces back to its view and the unmarked one's to none, or
    the comparison would mean nothing (traced by each server: the mark is laid out in its
    deployment's keyed layout)."""
    found = []
    for client, token in zip(clients, tokens, strict=True):
        reply = client.page(token, 1)
        traced = client.request("POST", "/trace", reply.body, {"Content-Type": "image/jpeg"})
        if traced.status != 200:
            raise RuntimeError(f"trace: {traced.status} {traced.body[:200]!r}")
        found.append(bool(json.loads(traced.body)["found"]))
    if found != [True, False]:
        raise RuntimeError(f"the switch did not work: marked/unmarked traced {found}")


@dataclass
class MarkCost:
    """One document's page times (ms) on the marked and the unmarked server, paired in order."""

    name: str
    marked: list[float] = field(default_factory=list)
    unmarked: list[float] = field(default_factory=list)

    @property
    def added(self) -> float:
        """What the mark adds to the page p50, as a share of the unmarked p50."""
        return p50(self.marked) / p50(self.unmarked) - 1

    @property
    def paired_added(self) -> float:
        return statistics.median(m / u for m, u in zip(self.marked, self.unmarked,
                                                       strict=True)) - 1


def measure(work: Path, docs: list[corpus.Document], pages: int, rounds: int,
            keep_code: bool = True, placement: bool = False) -> list[MarkCost]:
    """Each document's pages on a marked and an unmarked vaultd, alternately; the last entry
    is every page together ("all pages"). `placement`: the marked one draws the placement
    mark too (`trace.placement_mark`)."""
    vaults = [_vault(work / "marked", True, placement=placement),
              _vault(work / "unmarked", False, keep_code)]
    try:
        clients = [v.client() for v in vaults]
        tokens = [[v.link(c, v.store(c, d.data, d.name)["id"]) for d in docs]
                  for v, c in zip(vaults, clients, strict=True)]
        _check_switch(clients, [t[0] for t in tokens])
        costs = [_document(clients, [t[index] for t in tokens], doc, pages, rounds)
                 for index, doc in enumerate(docs)]
        for client in clients:
            client.close()
    finally:
        for vault in vaults:
            vault.stop()
    every = MarkCost("all pages")
    for cost in costs:
        every.marked += cost.marked
        every.unmarked += cost.unmarked
    return [*costs, every]


def _document(clients: list[Client], tokens: list[str], doc: corpus.Document, pages: int,
              rounds: int) -> MarkCost:
    numbers = sample_pages(doc.pages, pages)
    for number in numbers[:3]:  # each worker opens the document once: not measured
        for side in (0, 1):
            clients[side].page(tokens[side], number)
    cost = MarkCost(doc.name)
    times = (cost.marked, cost.unmarked)
    for turn in range(rounds):
        for position, number in enumerate(numbers):
            order = (0, 1) if (turn + position) % 2 == 0 else (1, 0)
            for side in order:
                times[side].append(_page_ms(clients[side], tokens[side], number))
    return cost


def table(costs: list[MarkCost]) -> list[str]:
    lines = ["| Document | page p50 marked | page p50 unmarked | added (p50s) "
             "| added (paired median) |", "|---|---|---|---|---|"]
    for cost in costs:
        lines.append(f"| {cost.name} | {p50(cost.marked):.1f} ms | {p50(cost.unmarked):.1f} ms "
                     f"| {100 * cost.added:+.1f} % | {100 * cost.paired_added:+.1f} % |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6, help="pages sampled per document")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--docs", type=int, default=4, help="system PDFs besides the generated")
    parser.add_argument("--keep-code", action="store_true",
                        help="draw the trace code on both servers: the invisible mark's cost")
    parser.add_argument("--placement", action="store_true",
                        help="the marked server draws the placement mark too")
    args = parser.parse_args()
    docs = [corpus.small_pdf(), corpus.image_heavy_pdf(), *corpus.system_pdfs(args.docs)]
    with tempfile.TemporaryDirectory(prefix="vaultd-leakmark-") as work:
        costs = measure(Path(work), docs, args.pages, args.rounds, args.keep_code,
                        args.placement)
    print("\n".join(table(costs)))


if __name__ == "__main__":
    main()
