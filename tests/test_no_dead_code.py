"""No dead code in the packages that ship (`vaultd`, `render`, `admin_cli`, `backends`): vulture
reads them with the tests, benches and scripts as the code that may use them, and every name it
finds unused is either used by a framework it cannot see (below, each with its reason) or dead,
and this test fails naming it.

What vulture cannot see: Tornado and Typer calling methods and commands by name, the templates
reading fields, MongoDB documents and JSON read by key (the records' camelCase fields), the
settings read by their key's name, CPython, Pillow and email-validator reading attributes set on
their objects, and PEP 562 module `__getattr__`. A name listed here that vulture no longer
reports fails the test too, so the list shrinks with the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

vulture = pytest.importorskip("vulture")

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("vaultd", "render", "admin_cli", "backends")
USERS = ("tests", "bench", "scripts", "setup.py")
# Typer commands, which the CLI calls by the name each decorator gives.
FRAMEWORK_DECORATORS = ["@app.command", "@*.command"]
# Names used where vulture does not look, by the file that declares them.
USED_ELSEWHERE = {
    # Tornado's RequestHandler and StaticFileHandler call these by name.
    "initialize": "Tornado: a handler's arguments from its route",
    "compute_etag": "Tornado: no ETag for a page (an override)",
    "log_exception": "Tornado: errors logged without the request's secrets (an override)",
    "set_extra_headers": "Tornado's StaticFileHandler: the pages' own headers",
    "get_modified_time": "Tornado's StaticFileHandler: no Last-Modified",
    "no_keep_alive": "Tornado's HTTP1ConnectionParameters, read per request",
    "get_backoff_time": "the Azure SDK's retry policy (an override)",
    "__call__": "a Protocol's call signature (render.kernels.blend)",
    "__getattr__": "PEP 562: a route module's ROUTES built when read (gates' registry)",
    "finalizer": "CPython's Popen, read by multiprocessing when the process is closed",
    "MAX_IMAGE_PIXELS": "Pillow's decompression-bomb limit, set in the worker",
    "SPECIAL_USE_DOMAIN_NAMES": "email-validator's list, emptied so .example addresses pass",
    # Fields the console's templates read (vaultd/web/templates/console/).
    "support": "the plan's support line, settings.html",
    "creator": "a key's creator, settings.html",
    "creator_removed": "a key's creator gone, settings.html",
    "label_x": "the time chart's label, file.html",
    "element_id": "a gate field's element id, _share_fields.html",
    "completion": "the analytics summary's field, read by key in its JSON",
    # Settings read by their key's last part (`Settings.backend_options`).
    "storage_azure_connection_string": "passed to the azure backend as connection_string",
    "storage_azure_account_url": "passed to the azure backend as account_url",
    "storage_azure_container": "passed to the azure backend as container",
    "storage_s3_bucket": "passed to the s3 backend as bucket",
    "storage_s3_prefix": "passed to the s3 backend as prefix",
    # The page hooks' record: what a hook may read of a sent page.
    "log_entry_id": "SentPage, the page path's hook interface",
}
# MongoDB documents and JSON bodies declared as TypedDicts, read and written by key: every
# field of `vaultd/records/`, and the camelCase (JSON) fields elsewhere.
RECORDS = "vaultd/records/"
DOCUMENT_FIELD = re.compile(r"[a-z]+[A-Z]\w*")


def unused_names(paths: list[Path]) -> list[tuple[str, str, int, str]]:
    """(file, name, line, kind) of each name vulture finds unused in SHIPPED, read with
    `paths` (which include the code that may use them)."""
    scan = vulture.Vulture(ignore_decorators=FRAMEWORK_DECORATORS)
    scan.scavenge([str(path) for path in paths])
    found = []
    for item in scan.get_unused_code(min_confidence=60):
        relative = Path(item.filename).resolve().relative_to(ROOT)
        if relative.parts[0] in SHIPPED:
            found.append((str(relative), item.name, item.first_lineno, item.typ))
    return found


def dead(found: list[tuple[str, str, int, str]]) -> list[str]:
    return [f"{path}:{line}: unused {kind} {name}" for path, name, line, kind in found
            if name not in USED_ELSEWHERE
            and not (kind == "variable" and (path.startswith(RECORDS)
                                             or DOCUMENT_FIELD.fullmatch(name)))]


def test_the_shipped_packages_hold_no_dead_code() -> None:
    found = unused_names([ROOT / name for name in (*SHIPPED, *USERS)])
    assert dead(found) == []
    stale = sorted(set(USED_ELSEWHERE) - {name for _, name, _, _ in found})
    assert stale == [], "no longer reported: remove from USED_ELSEWHERE"


def test_a_function_nothing_calls_is_found(tmp_path: Path) -> None:
    package = tmp_path / "vaultd"
    package.mkdir()
    (package / "orphans.py").write_text(
        "import typer\napp = typer.Typer()\n\n"
        "def used() -> int:\n    return 1\n\n"
        "def forgotten() -> int:\n    return used()\n\n"
        "@app.command('list')\ndef list_() -> None:\n    pass\n\n"
        "class Doc:\n    accountId: str\n    support: str\n    spare: int\n\nprint(Doc())\n")
    found = [(Path(path).name, name, line, kind) for path, name, line, kind in
             _unused_under(tmp_path)]
    assert dead(found) == ["orphans.py:7: unused function forgotten",
                           "orphans.py:17: unused variable spare"]


def _unused_under(root: Path) -> list[tuple[str, str, int, str]]:
    scan = vulture.Vulture(ignore_decorators=FRAMEWORK_DECORATORS)
    scan.scavenge([str(root)])
    return [(item.filename, item.name, item.first_lineno, item.typ)
            for item in scan.get_unused_code(min_confidence=60)]
