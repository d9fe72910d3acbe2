"""Costly forensic fixtures (phone photos of a page, the best wash of a page) kept on disk from
one run of the tests to the next, under pytest's cache directory (docs/testing.md, "Where the
time goes").

An entry is found again only when everything that made it is the same: its inputs (the images
it was made from, by their pixels, and its numbers), the source of `bench/` and `render/` (every
Python, C and compiled kernel file: the marking, the attacks, the generators), the source of
the test module that made it, and the versions of the libraries that draw and encode pixels. A
change to any of them makes the entry anew, so a test reads what the code as it is would make;
the code under test (the decoder, the placement read) always runs. Entries of other code are
removed when the first entry of the current code is written. Without the cache plugin
(`-p no:cacheprovider`) nothing is kept and every fixture is made."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
CODE = ("bench", "render")
CODE_SUFFIXES = {".py", ".c", ".h", ".so"}
LIBRARIES = ("numpy", "pillow", "pypdfium2", "pikepdf")

Made = TypeVar("Made")
Input = bytes | str | int | float | None | Image.Image


@functools.cache
def code_fingerprint() -> str:
    """Of the code every entry depends on: `bench/` and `render/`, and the libraries."""
    digest = hashlib.sha256()
    for directory in CODE:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    for library in LIBRARIES:
        digest.update(f"{library}=={importlib.metadata.version(library)}\0".encode())
    return digest.hexdigest()[:24]


@functools.cache
def _module_source(path: str) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


def _input_digest(name: str, inputs: Sequence[Input], make: Callable[[], object]) -> str:
    digest = hashlib.sha256(name.encode() + b"\0")
    digest.update(_module_source(inspect.getfile(make)))
    for value in inputs:
        if isinstance(value, Image.Image):
            digest.update(f"image {value.mode} {value.size}\0".encode())
            digest.update(hashlib.sha256(value.tobytes()).digest())
        elif isinstance(value, bytes):
            digest.update(b"bytes " + hashlib.sha256(value).digest())
        else:
            digest.update(f"{type(value).__name__} {value!r}\0".encode())
    return digest.hexdigest()[:32]


class FixtureStore:
    """Entries of the current code in `directory`, or nothing kept when it is None."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._cleared = False

    def kept(self, name: str, inputs: Sequence[Input], make: Callable[[], Made]) -> Made:
        """What `make()` returns (`inputs`: everything it reads besides the code), read from
        the store when the same code made it from the same inputs before."""
        if self.directory is None:
            return make()
        here = self.directory / code_fingerprint()
        path = here / f"{name}-{_input_digest(name, inputs, make)}.pickle"
        try:
            with path.open("rb") as stored:
                found: Made = pickle.load(stored)
            return found
        except (OSError, EOFError, pickle.UnpicklingError):
            pass  # not made yet, or cut short by a killed run: made again
        made = make()
        self._clear_other_code(here)
        here.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: the other xdist worker may read the same entry.
        handle, partial = tempfile.mkstemp(dir=here, suffix=".partial")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(made, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
        return made

    def _clear_other_code(self, here: Path) -> None:
        if self._cleared or self.directory is None or not self.directory.exists():
            return
        self._cleared = True
        for other in self.directory.iterdir():
            if other != here:
                shutil.rmtree(other, ignore_errors=True)


@pytest.fixture(scope="session")
def fixture_store(pytestconfig: pytest.Config) -> FixtureStore:
    """The store under pytest's cache directory (none with `-p no:cacheprovider`)."""
    cache = getattr(pytestconfig, "cache", None)
    return FixtureStore(None if cache is None else Path(cache.mkdir("forensic-fixtures")))
