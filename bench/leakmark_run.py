"""The leak-tracing mark's cost on a page served over HTTP, with and without it, in one run.

    python -m bench.leakmark_run [--pages 6] [--rounds 4] [--docs 4] [--keep-code]

Starts two vaultd exactly as `bench.run` does; the second with `bench/unmarked_site` first on
its PYTHONPATH, which serves pages without the mark (no invisible mark, no trace code; the
strip keeps its layout; with `--keep-code` the trace code is drawn on both, so the figure is
the invisible mark's alone). The same documents go to both; page requests alternate between the
two servers (which one goes first alternates too), so load elsewhere on the machine hits both
alike. Reports, per document, the page p50 of each and the median of the paired ratios.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image

from bench import corpus
from bench.latency import p50, sample_pages
from bench.server import Client, Vault
from render.forensic import decode

UNMARKED_SITE = Path(__file__).resolve().parent / "unmarked_site"


def _vault(work: Path, marked: bool, keep_code: bool = False) -> Vault:
    vault = Vault(work)
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
    """The marked server's page decodes to an id and the unmarked one's to none, or the
    comparison would mean nothing."""
    found = []
    for client, token in zip(clients, tokens, strict=True):
        reply = client.page(token, 1)
        found.append(decode(Image.open(io.BytesIO(reply.body))) is not None)
    if found != [True, False]:
        raise RuntimeError(f"the switch did not work: marked/unmarked decoded {found}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6, help="pages sampled per document")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--docs", type=int, default=4, help="system PDFs besides the generated")
    parser.add_argument("--keep-code", action="store_true",
                        help="draw the trace code on both servers: the invisible mark's cost")
    args = parser.parse_args()
    docs = [corpus.small_pdf(), corpus.image_heavy_pdf(), *corpus.system_pdfs(args.docs)]
    with tempfile.TemporaryDirectory(prefix="vaultd-leakmark-") as work:
        vaults = [_vault(Path(work) / "marked", True),
                  _vault(Path(work) / "unmarked", False, args.keep_code)]
        try:
            clients = [v.client() for v in vaults]
            tokens = [[v.link(c, v.store(c, d.data, d.name)["id"]) for d in docs]
                      for v, c in zip(vaults, clients, strict=True)]
            _check_switch(clients, [t[0] for t in tokens])
            print("| Document | page p50 marked | page p50 unmarked | added (p50s) "
                  "| added (paired median) |\n|---|---|---|---|---|")
            all_marked, all_unmarked = [], []
            for index, doc in enumerate(docs):
                pages = sample_pages(doc.pages, args.pages)
                for number in pages[:3]:  # each worker opens the document once: not measured
                    for side in (0, 1):
                        clients[side].page(tokens[side][index], number)
                times: list[list[float]] = [[], []]
                for turn in range(args.rounds):
                    for position, number in enumerate(pages):
                        order = (0, 1) if (turn + position) % 2 == 0 else (1, 0)
                        for side in order:
                            times[side].append(_page_ms(clients[side], tokens[side][index],
                                                        number))
                ratios = [m / u for m, u in zip(times[0], times[1], strict=True)]
                all_marked += times[0]
                all_unmarked += times[1]
                print(f"| {doc.name} | {p50(times[0]):.1f} ms | {p50(times[1]):.1f} ms | "
                      f"{100 * (p50(times[0]) / p50(times[1]) - 1):+.1f} % | "
                      f"{100 * (statistics.median(ratios) - 1):+.1f} % |")
            print(f"| all pages | {p50(all_marked):.1f} ms | {p50(all_unmarked):.1f} ms | "
                  f"{100 * (p50(all_marked) / p50(all_unmarked) - 1):+.1f} % | |")
            for client in clients:
                client.close()
        finally:
            for vault in vaults:
                vault.stop()


if __name__ == "__main__":
    main()
