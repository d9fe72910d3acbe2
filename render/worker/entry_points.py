"""Every task a render worker runs, and the worker process's own start: the one list.

The server submits a task as one of these functions (`RenderPool.run(render_page, ...)`); it
travels pickled by reference, this module's name and the function's. So this is the one module of
the worker package the server imports, and it imports no drawing: each entry point imports its
implementation when it is called, which happens only in a worker. There the import finds the
module already loaded. The zygote preloads this module (for `start_worker`, the worker process's
target) and `render.worker.serve`, which imports every implementation named here, before any
worker is forked: a confined worker may be unable to read a module file at all
(`render.worker.late_imports`). `tests/test_render_layers.py` holds both halves: the server loads
no drawing module, and `serve` imports what these functions import.
"""

from __future__ import annotations

from collections.abc import Sequence
from multiprocessing.connection import Connection

from render.wire.model import (
    DocumentSource,
    PixelBudget,
    ValidationResult,
    WatermarkSpec,
    WorkerConfig,
)


def start_worker(tasks_end: Connection, results_end: Connection, config: WorkerConfig) -> None:
    """A worker process's target: serve tasks until the server closes the task pipe."""
    from render.worker.serve import serve

    serve(tasks_end, results_end, config)


def validate_document(
    source: DocumentSource, rendition_budget: PixelBudget | None = None
) -> ValidationResult:
    """Page count of an upload (Unreadable if it cannot be rendered): `render.worker.tasks`."""
    from render.worker.tasks import validate_document as validate

    return validate(source, rendition_budget)


def render_page(
    source: DocumentSource,
    page_number: int,
    mark: WatermarkSpec,
    budget: PixelBudget,
    jpeg_quality: int = 80,
    page_cache_bytes: int | None = None,
) -> bytes:
    """One page as a watermarked JPEG: `render.worker.tasks`."""
    from render.worker.tasks import render_page as render

    return render(source, page_number, mark, budget, jpeg_quality, page_cache_bytes)


def image_rendition(source: DocumentSource, budget: PixelBudget) -> bytes:
    """A large picture's PNG rendition, kept beside the original: `render.worker.rendition`."""
    from render.worker.rendition import image_rendition as rendition

    return rendition(source, budget)


def identify_office(source: DocumentSource) -> str:
    """The Office content type of a ZIP upload, from its own index: `render.office.formats`."""
    from render.office.formats import identify_office as identify

    return identify(source)


def trace_image(data: bytes, layout_key: bytes | None = None, long_side: int | None = None
                ) -> int | None:
    """The value marked in a leaked image, or None: `render.forensic.trace_task`."""
    from render.forensic.trace_task import trace_image as trace

    return trace(data, layout_key) if long_side is None else trace(data, layout_key, long_side)


def read_placement(data: bytes, long_side: int | None = None) -> bytes | None:
    """The placement mark's offsets measured on a leaked image: `render.forensic.trace_task`."""
    from render.forensic.trace_task import read_placement as read

    return read(data) if long_side is None else read(data, long_side)


def score_placement(evidence: bytes, seeds: list[bytes]) -> bytes:
    """Each candidate seed's standing against a leak's placement evidence:
    `render.forensic.trace_task`."""
    from render.forensic.trace_task import score_placement as score

    return score(evidence, seeds)


def read_leak(data: bytes, long_side: int, print_key: bytes, dates: Sequence[str] = ()
              ) -> bytes | None:
    """A leaked image's placement evidence, the scores of `dates` as the day its pattern
    prints, and its page print: `render.forensic.trace_task`."""
    from render.forensic.trace_task import read_leak as read
    from render.watermark.date_words import date_templates

    return read(data, long_side, print_key, dates, date_templates)


def page_print(data: bytes, print_key: bytes) -> bytes | None:
    """A served page's print, which narrows a placement trace: `render.forensic.trace_task`."""
    from render.forensic.trace_task import page_print as made

    return made(data, print_key)
