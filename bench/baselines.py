"""What a page costs without vaultd: a bare pypdfium2 render plus JPEG, and poppler's pdftoppm.

Both draw the same page at the same pixel size as vaultd's page area (the budget's scale), with
the same JPEG quality. The bare render keeps its document open, as vaultd's per-worker cache
does; pdftoppm is a fresh process per page, which is how it is used from a server.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pypdfium2 as pdfium

from render.page.sizing import fit_scale, scaled_size
from render.wire.model import PixelBudget

JPEG_QUALITY = 80  # vaultd's


class BareRenderer:
    """pypdfium2's plain path: load the page, render, to PIL, save as JPEG."""

    def __init__(self, data: bytes, budget: PixelBudget) -> None:
        self._document = pdfium.PdfDocument(data)
        self._budget = budget

    def size(self, number: int) -> tuple[int, int]:
        page = self._document[number - 1]
        try:
            width, height = page.get_size()
            return scaled_size(width, height, fit_scale(width, height, self._budget))
        finally:
            page.close()

    def render(self, number: int) -> tuple[float, bytes]:
        """(seconds, JPEG) for page `number`."""
        started = time.perf_counter()
        page = self._document[number - 1]
        width, height = page.get_size()
        bitmap = page.render(scale=fit_scale(width, height, self._budget))
        out = io.BytesIO()
        bitmap.to_pil().save(out, "JPEG", quality=JPEG_QUALITY)
        bitmap.close()
        page.close()
        return time.perf_counter() - started, out.getvalue()

    def close(self) -> None:
        self._document.close()


class Pdftoppm:
    """poppler's renderer, one process per page, scaled to the same pixel size."""

    def __init__(self, data: bytes) -> None:
        self.available = shutil.which("pdftoppm") is not None
        self._dir = Path(tempfile.mkdtemp(prefix="vaultd-bench-ppm-"))
        self._pdf = self._dir / "doc.pdf"
        self._pdf.write_bytes(data)

    def render(self, number: int, size: tuple[int, int]) -> float:
        out = self._dir / "page"
        command = ["pdftoppm", "-f", str(number), "-l", str(number), "-jpeg",
                   "-jpegopt", f"quality={JPEG_QUALITY}", "-scale-to-x", str(size[0]),
                   "-scale-to-y", str(size[1]), "-singlefile", str(self._pdf), str(out)]
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        return time.perf_counter() - started

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
