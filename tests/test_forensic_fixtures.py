"""The forensic tests' shared fixtures: the text cover is the page the benchmarks measure, and a
stored fixture is read back only for the same inputs and code (`tests.forensic_store`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bench.leakmark_attacks import corpus_pages
from tests import forensic_store
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def test_the_text_cover_is_the_benchmarks_first_page() -> None:
    expected, cover = corpus_pages(1)[0], text_cover()
    assert cover.name == expected.name and cover.page_height == expected.page_height
    assert cover.drawn == expected.drawn
    assert np.array_equal(np.asarray(cover.image), np.asarray(expected.image))


class _Made:
    """Counts the fixtures made (each a new image of the given grey)."""

    def __init__(self) -> None:
        self.count = 0

    def grey(self, level: int) -> Image.Image:
        self.count += 1
        return Image.new("L", (64, 48), level)


def test_an_entry_is_made_once_and_read_back_equal(tmp_path: Path) -> None:
    made = _Made()
    store = forensic_store.FixtureStore(tmp_path)
    source = Image.new("RGB", (8, 8), (1, 2, 3))
    first = store.kept("grey", [source, 7], lambda: made.grey(7))
    again = forensic_store.FixtureStore(tmp_path).kept("grey", [source, 7], lambda: made.grey(7))
    assert made.count == 1
    assert again is not first and again.tobytes() == first.tobytes() == bytes([7]) * 64 * 48
    # Another input image (one pixel apart), number or name is another entry.
    changed = source.copy()
    changed.putpixel((0, 0), (1, 2, 4))
    for name, inputs in (("grey", [changed, 7]), ("grey", [source, 8]), ("other", [source, 7])):
        store.kept(name, inputs, lambda: made.grey(9))
    assert made.count == 4


def test_another_codes_entries_are_not_read_and_go(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    made = _Made()
    forensic_store.FixtureStore(tmp_path).kept("grey", [1], lambda: made.grey(1))
    stale = tmp_path / forensic_store.code_fingerprint()
    assert stale.is_dir()
    monkeypatch.setattr(forensic_store, "code_fingerprint", lambda: "changed-code")
    store = forensic_store.FixtureStore(tmp_path)
    assert store.kept("grey", [1], lambda: made.grey(2)).getpixel((0, 0)) == 2
    assert made.count == 2
    assert [path.name for path in tmp_path.iterdir()] == ["changed-code"]


def test_a_cut_short_entry_is_made_again(tmp_path: Path) -> None:
    made = _Made()
    store = forensic_store.FixtureStore(tmp_path)
    store.kept("grey", [3], lambda: made.grey(3))
    (entry,) = (tmp_path / forensic_store.code_fingerprint()).glob("grey-*.pickle")
    entry.write_bytes(entry.read_bytes()[:20])
    assert forensic_store.FixtureStore(tmp_path).kept("grey", [3], lambda: made.grey(3)) \
        .getpixel((0, 0)) == 3
    assert made.count == 2


def test_without_a_store_every_fixture_is_made(tmp_path: Path) -> None:
    made = _Made()
    store = forensic_store.FixtureStore(None)
    for _ in range(2):
        store.kept("grey", [5], lambda: made.grey(5))
    assert made.count == 2


def test_the_code_fingerprint_follows_the_source_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forensic_store, "ROOT", tmp_path)
    for directory in forensic_store.CODE:
        (tmp_path / directory / "kernels").mkdir(parents=True)
        (tmp_path / directory / "kernels" / "_kernel.c").write_text("int x;\n")
        (tmp_path / directory / "module.py").write_text("X = 1\n")
        (tmp_path / directory / "results.md").write_text("a figure\n")
    fingerprint = forensic_store.code_fingerprint.__wrapped__
    before = fingerprint()
    (tmp_path / "bench" / "results.md").write_text("another figure\n")
    assert fingerprint() == before  # the benchmarks' results are not code
    (tmp_path / "render" / "kernels" / "_kernel.c").write_text("int y;\n")
    changed = fingerprint()
    assert changed != before
    (tmp_path / "bench" / "module.py").write_text("X = 2\n")
    assert fingerprint() not in (before, changed)
