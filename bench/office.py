"""Office conversion costs: `python -m bench.office [--rounds N]`.

For a 10-page DOCX, a 5-sheet XLSX and a 30-slide PPTX (built by tests/office_documents.py):
the conversion alone (render.office.runner, as vaultd runs it: confined, a fresh profile per
job), the converter's peak memory (the resident sets of its processes, sampled every 20 ms and
added up), the whole upload over HTTP (identification, conversion, storage, the PDF's
validation) and the first page's latency after it, on a vaultd started with
`upload.office = true`. Writes bench/results/office.md; `bench.run` calls `measure` for one
round and puts the table in its report (skipped where LibreOffice is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.server import Vault
from render.office import runner
from tests import office_documents as od
from vaultd.services.files.office import MEMORY_LIMIT

RESULTS = Path(__file__).resolve().parent / "results"
_WORDS = ["revenue", "forecast", "covenant", "escrow", "tranche", "maturity", "indemnity",
          "warranty", "dividend", "liability"]


def _paragraph(seed: int) -> str:
    return " ".join(_WORDS[(seed * 7 + i) % len(_WORDS)] for i in range(60))


def samples() -> dict[str, tuple[str, bytes]]:
    page_text = [" ".join(_paragraph(p * 10 + i) for i in range(6)) for p in range(10)]
    sheets = [[[f"{_WORDS[(r + c) % 10]} {s}.{r}.{c}" for c in range(6)] for r in range(120)]
              for s in range(5)]
    return {"docx": ("10-page DOCX", od.docx(page_text)),
            "xlsx": ("5-sheet XLSX", od.xlsx(sheets)),
            "pptx": ("30-slide PPTX", od.pptx([f"Slide {i}: {_paragraph(i)[:80]}"
                                               for i in range(30)]))}


class PeakRss:
    """The converter processes' resident sets added up, their peak while sampling."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak_kib = max(self.peak_kib, _converter_rss_kib())


def _converter_rss_kib() -> int:
    total = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"vaultd-convert-" in (entry / "cmdline").read_bytes():
                total += next(int(line.split()[1]) for line in
                              (entry / "status").read_text().splitlines()
                              if line.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError):
            continue
    return total


def convert_once(ext: str, data: bytes) -> tuple[float, int, int]:
    """(seconds, peak KiB, PDF bytes) of one conversion as vaultd runs it."""
    async def read(offset: int, length: int) -> bytes:
        return data[offset:offset + length]

    job = runner.Job(len(data), ext, 120, MEMORY_LIMIT, 256 << 20)
    with PeakRss() as peak:
        started = time.perf_counter()
        pdf, _ = asyncio.run(runner.convert(job, read))
        seconds = time.perf_counter() - started
    return seconds, peak.peak_kib, len(pdf)


def over_http(vault: Vault, name: str, data: bytes) -> tuple[float, float, int]:
    """(upload seconds, first page seconds, page count) through a real vaultd."""
    client = vault.client()
    try:
        started = time.perf_counter()
        created = vault.store(client, data, name)
        uploaded = time.perf_counter() - started
        token = vault.link(client, created["id"])
        page = client.page(token, 1)
        if page.status != 200:
            raise RuntimeError(f"page 1 of {name}: {page.status}")
        return uploaded, page.seconds, int(created["pageCount"])
    finally:
        client.close()


@dataclasses.dataclass
class Figures:
    """One document's medians."""

    document: str
    pages: int
    conversion_s: float
    peak_mib: float
    pdf_kib: float
    upload_s: float
    first_page_ms: float


def measure(work: Path, rounds: int = 1) -> list[Figures]:
    """Each sample's figures ([] when LibreOffice is not installed)."""
    if not runner.installed():
        return []
    vault = Vault(work, {"VAULTD_UPLOAD_OFFICE": "true"}).start()
    try:
        return [_figures(label, ext, data, rounds, vault)
                for ext, (label, data) in samples().items()]
    finally:
        vault.stop()


def _figures(label: str, ext: str, data: bytes, rounds: int, vault: Vault) -> Figures:
    runs = [convert_once(ext, data) for _ in range(rounds)]
    http = [over_http(vault, f"bench.{ext}", data) for _ in range(rounds)]
    return Figures(label, http[0][2], statistics.median(r[0] for r in runs),
                   statistics.median(r[1] for r in runs) / 1024,
                   statistics.median(r[2] for r in runs) / 1024,
                   statistics.median(h[0] for h in http),
                   statistics.median(h[1] for h in http) * 1000)


def markdown(figures: list[Figures], rounds: int) -> str:
    if not figures:
        return "Skipped: LibreOffice is not installed (`bash scripts/setup.sh --office`).\n"
    rows = ["| document | pages | conversion (s) | converter peak RSS (MiB) | PDF (KiB) | "
            "upload (s) | first page (ms) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows += [f"| {f.document} | {f.pages} | {f.conversion_s:.2f} | {f.peak_mib:.0f} | "
             f"{f.pdf_kib:.0f} | {f.upload_s:.2f} | {f.first_page_ms:.0f} |" for f in figures]
    return "\n".join(rows) + (f"\n\nMedians of {rounds} round{'s' if rounds > 1 else ''} "
                              "each; conversion alone as vaultd runs it (confined, a fresh "
                              "profile), upload over HTTP with `upload.office = true`.\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.office", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-office-") as work:
        figures = measure(Path(work), args.rounds)
    report = "# Office conversion\n\n" + markdown(figures, args.rounds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "office.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
