"""OCR with tesseract (Debian's tesseract-ocr), for checking what a watermark says."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from PIL import Image


def read_text(image: Image.Image, workdir: Path) -> str:
    assert shutil.which("tesseract"), "tesseract missing: apt-get install tesseract-ocr"
    path = workdir / "ocr-input.png"
    image.resize((image.width * 2, image.height * 2), Image.Resampling.LANCZOS).save(path)
    done = subprocess.run(["tesseract", str(path), "stdout", "--psm", "6"], capture_output=True,
                          text=True, check=True, timeout=60)
    return done.stdout


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: how many characters OCR got wrong in a string it should have read."""
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, char_b in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1,
                                           previous + (char_a != char_b))
    return row[-1]
