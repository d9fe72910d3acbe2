"""vaultd's performance benchmark: one command, one markdown report.

    python -m bench.run            # about 2 minutes on the 2-core machine, plus the console
                                   # pages at 10^5 files and 10^6 log entries (the seeding)
    python -m bench.run --quick    # fewer samples, a smoke test (bench/results/quick.md)
    python -m bench.run --no-office   # without the Office conversion section (~30 s less)

Starts a vaultd exactly as deployed (embedded database, default settings), creates an account
and a key, uploads the corpus, measures, prints the report and writes it to
bench/results/latest.md (raw figures in bench/results/latest.json). See bench/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from bench import (
    breakdown,
    console,
    corpus,
    gates_cost,
    latency,
    leakmark_run,
    load,
    office,
    page_cost,
    report,
    rooms,
    transfer,
    warm_cold,
)
from bench.server import VIEWER_IP, Client, Vault
from render.wire.model import PixelBudget

RESULTS = Path(__file__).resolve().parent / "results"


@dataclasses.dataclass
class Plan:
    pages_per_doc: int = 6
    rounds: int = 3
    system_docs: int = 7
    seconds_per_level: float = 8.0
    load_rounds: int = 4  # short slices, interleaved: a burst of load elsewhere hits all levels
    transfer_rounds: int = 3
    first_page_rounds: int = 15
    cpu_pages: int = 150
    cold_rounds: int = 3
    big_rounds: int = 20
    mark_rounds: int = 6
    office: bool = True  # one round of bench.office (skipped without LibreOffice)
    gate_rounds: int = 30
    room_files: int = 1000
    room_folders: int = 50
    room_rounds: int = 30
    console_files: int = 100_000  # the console's pages timed at this many files (bench.console)
    console_entries: int = 1_000_000  # and this many access-log entries
    console_samples: int = 40

    @classmethod
    def quick(cls) -> Plan:
        return cls(pages_per_doc=3, rounds=1, system_docs=3, seconds_per_level=2.0,
                   load_rounds=1, transfer_rounds=1, first_page_rounds=4, cpu_pages=10,
                   cold_rounds=1, big_rounds=6, mark_rounds=1, gate_rounds=4, room_files=100,
                   room_folders=10, room_rounds=6, console_files=1000,
                   console_entries=10_000, console_samples=10)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke test)")
    parser.add_argument("--no-office", action="store_true",
                        help="skip the Office conversion section (bench.office, one round)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the markdown report (default: bench/results/"
                             "latest.md, or quick.md with --quick)")
    return parser.parse_args(argv)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def upload_corpus(vault: Vault, client: Client, docs: list[corpus.Document]) -> dict[str, str]:
    """Upload every document and open a view link to each; name -> token."""
    tokens = {}
    for doc in docs:
        stored = vault.store(client, doc.data, doc.name)
        if stored["pageCount"] != doc.pages:
            raise RuntimeError(f"{doc.name}: vaultd counted {stored['pageCount']} pages")
        tokens[doc.name] = vault.link(client, stored["id"])
    return tokens


def cpu_per_page(vault: Vault, client: Client, token: str, pages: int, count: int,
                 ) -> page_cost.Cost:
    """CPU milliseconds per page, per process kind, and the database commands a page sent,
    over `count` sequential page requests (`bench.page_cost`)."""
    return page_cost.measure(vault, client, f"/views/{token}/pages", pages, count,
                             {"x-viewer-ip": VIEWER_IP})


def run(plan: Plan, command: str) -> report.Results:
    log("preparing the corpus")
    corpus_docs = Corpus(corpus.system_pdfs(plan.system_docs), corpus.image_heavy_pdf(),
                         corpus.small_pdf())
    results = report.Results(command=command, started=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                             machine=_machine(), docs=corpus_docs.all)
    with tempfile.TemporaryDirectory(prefix="vaultd-bench-") as work:
        log("starting vaultd")
        vault = Vault(Path(work)).start()
        try:
            _measure(vault, plan, corpus_docs, results)
        finally:
            vault.stop()
        log("link gates' cost: a vaultd without the gate check, pages alternated with one with it")
        results.gates = gates_cost.measure(Path(work) / "gates", corpus_docs.small,
                                           plan.pages_per_doc, plan.gate_rounds)
        log("the invisible mark's cost: a vaultd without it, pages alternated with one with it")
        results.mark_cost = leakmark_run.measure(Path(work) / "mark", corpus_docs.all,
                                                 plan.pages_per_doc, plan.mark_rounds)
        if plan.office:
            log("Office conversion: a vaultd with upload.office = true, one round")
            results.office = office.measure(Path(work) / "office", rounds=1)
        log(f"the console's pages at {plan.console_files:,} files and "
            f"{plan.console_entries:,} log entries (seeded in bulk)")
        results.console = console.measure_cost(Path(work) / "console", plan.console_files,
                                               plan.console_entries, plan.console_samples)
    return results


@dataclasses.dataclass
class Corpus:
    system: list[corpus.Document]
    heavy: corpus.Document
    small: corpus.Document

    @property
    def all(self) -> list[corpus.Document]:
        return [*self.system, self.heavy, self.small]

    @property
    def for_load(self) -> corpus.Document:
        """The longest real document (the heavy one when the machine has none)."""
        return max(self.system, key=lambda d: d.pages) if self.system else self.heavy


def _measure(vault: Vault, plan: Plan, docs: Corpus, results: report.Results) -> None:
    budget = PixelBudget()  # vaultd's defaults (render.long_side, render.max_pixels)
    heavy, small = docs.heavy, docs.small
    client = vault.client()
    log("upload speed and memory")
    results.upload = transfer.upload_speeds(vault, client, heavy.data, plan.transfer_rounds)
    results.memory = transfer.concurrent_upload_memory(vault, heavy.data)
    results.ceiling = transfer.encryption_ceiling(heavy.data, plan.transfer_rounds)
    log("download speed")
    delivery = vault.store(client, heavy.data, "delivery.pdf", kind="delivery")
    results.download = transfer.download_speeds(client, delivery["id"], len(heavy.data),
                                                plan.transfer_rounds)
    log(f"uploading {len(docs.all)} documents")
    tokens = upload_corpus(vault, client, docs.all)
    results.cold = {name: latency.cold_open(client, token) for name, token in tokens.items()}
    log("page 1: small PDF against the 20 MB PDF")
    results.first_small, results.first_large = latency.first_pages(
        client, tokens[small.name], tokens[heavy.name], plan.first_page_rounds)
    for doc in docs.all:
        log(f"page latency: {doc.name}")
        results.pages.append(latency.measure(client, tokens[doc.name], doc, budget,
                                             plan.pages_per_doc, plan.rounds))
        results.steps.append(breakdown.measure(doc, budget, plan.pages_per_doc, plan.rounds))
    _cache_cases(vault, client, plan, docs, results, budget)
    busiest = docs.for_load
    results.load_doc = busiest.name
    log(f"CPU per page by process ({busiest.name})")
    results.cpu = cpu_per_page(vault, client, tokens[busiest.name], min(busiest.pages, 20),
                               plan.cpu_pages)
    log("throughput at 1, 2, 4, 8 and 16 clients")
    results.levels = load.measure(vault, tokens[busiest.name], min(busiest.pages, 40),
                                  plan.seconds_per_level, plan.load_rounds)
    client.close()
    log(f"a room of {plan.room_files} files in {plan.room_folders} folders")
    results.rooms = rooms.measure_on(vault, plan.room_files, plan.room_folders, plan.room_rounds)


def _cache_cases(vault: Vault, client: Client, plan: Plan, docs: Corpus,
                 results: report.Results, budget: PixelBudget) -> None:
    for doc in docs.all:
        log(f"cold and warm pages: {doc.name}")
        results.cold_warm += warm_cold.cold_and_warm(vault, client, doc, budget,
                                                     plan.pages_per_doc, plan.cold_rounds)
    log("the 100-megapixel PNG")
    results.big, results.big_upload = warm_cold.big_image(vault, client, warm_cold.big_png(),
                                                          budget, plan.big_rounds)
    log("two accounts alternating")
    results.two_accounts = warm_cold.two_accounts(vault, docs.for_load, budget,
                                                  plan.pages_per_doc, plan.rounds)


def _machine() -> str:
    load1, load5, _ = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, {platform.python_implementation()} "
            f"{platform.python_version()}, load average {load1:.1f} / {load5:.1f} at start")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.monotonic()
    command = "python -m bench.run" + (" --quick" if args.quick else "") + (
        " --no-office" if args.no_office else "")
    plan = Plan.quick() if args.quick else Plan()
    plan.office = not args.no_office
    results = run(plan, command)
    results.elapsed = time.monotonic() - started
    text = report.markdown(results)
    if plan.office:  # Office figures: conversion time, converter memory, first page
        text += "\n### Office conversion\n\n" + office.markdown(results.office, 1)
    print(text)
    out = args.out or RESULTS / ("quick.md" if args.quick else "latest.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(report.raw(results)))
    log(f"written to {out} in {results.elapsed:.0f} s")


if __name__ == "__main__":
    main()
