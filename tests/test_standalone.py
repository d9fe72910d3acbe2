"""The repository stands alone: nothing in it reads or names the workplace's sibling folder.

A clone in a folder of its own must install, test and document itself; the test vectors it
needs live in tests/vectors/ with their licence, and the interface is described in docs/.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIBLING = "shared"
# Written in pieces so that this file does not name what it looks for.
PATTERNS = [
    re.compile(re.escape("..") + r"[/\\]" + SIBLING + r"\b"),  # a relative path up and across
    re.compile(r"parents?\[\d+\]\s*/\s*['\"]" + SIBLING + r"['\"]"),  # the same, by pathlib
]


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def naming_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):  # binary files (images, PDFs) cannot name a path
        return []
    return [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if any(pattern.search(line) for pattern in PATTERNS)]


def test_no_file_in_the_repository_reads_or_names_the_sibling_folder() -> None:
    files = tracked_files()
    assert len(files) > 100, "git listed too few files: is this a checkout?"
    found = [hit for path in files if path.is_file() for hit in naming_lines(path)]
    assert found == [], "the repository must stand alone:\n" + "\n".join(found)


def test_the_patterns_catch_both_ways_of_naming_it() -> None:
    relative = ".." + "/" + SIBLING + "/spec/x.md"
    by_pathlib = "Path(__file__).parents[2] / '" + SIBLING + "' / 'testvectors'"
    assert all(any(p.search(text) for p in PATTERNS) for text in (relative, by_pathlib))
    assert not any(p.search("tests/vectors/wycheproof") for p in PATTERNS)


def test_the_vectors_the_crypto_tests_need_are_carried_with_their_licence() -> None:
    folder = ROOT / "tests" / "vectors" / "wycheproof"
    for name in ("LICENSE", "aes_gcm_test.json", "c2sp_chunked_encryption_aes_256_gcm_test.json"):
        assert (folder / name).is_file(), name
    assert "Apache License" in (folder / "LICENSE").read_text()
