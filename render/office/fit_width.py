"""Spreadsheets rewritten to fit their sheets to the page width, inside the confined converter.

`render.office.launch` calls `fit_sheets` after its confinement and before it becomes
LibreOffice: the archive is untrusted, so it is read only here, under the converter's sandbox,
and first passes the render worker's own checks (render.office.formats: declared sizes, ratios,
no DTD, nesting depth). Only the parts that hold a print setup are read whole (an XLSX's
worksheets, an ODS's styles.xml; a part over MAX_PART is left as it is) and edited as bytes
(render.office.page_setup); every other entry is copied in pieces. An archive zipfile cannot
read or rewrite is converted as uploaded.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib

from render.office.formats import check_sizes, scan_parts
from render.office.page_setup import fit_page_layouts, fit_worksheet

MAX_PART = 64 << 20  # a print setup in a bigger part stays as LibreOffice paginates it
_PIECE = 1 << 20
_WORKSHEET = re.compile(r"xl/worksheets/[^/]+\.xml")
_EARLIEST = (1980, 1, 1, 0, 0, 0)  # a ZIP's earliest timestamp
_MANIFEST = "META-INF/manifest.xml"
_MANIFEST_END = re.compile(rb"</(?:([A-Za-z_][\w.-]*):)?manifest>\s*$")
# An ODS without styles.xml (no office suite writes one; tests do) gets LibreOffice's default
# page style, fitted: the "Default" master page every sheet uses unless its style says otherwise.
_DEFAULT_STYLES = (
    b'<?xml version="1.0" encoding="UTF-8"?><office:document-styles xmlns:office="urn:oasis:'
    b'names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:'
    b'xmlns:style:1.0" office:version="1.3"><office:automatic-styles><style:page-layout '
    b'style:name="Fit"><style:page-layout-properties style:scale-to-X="1" style:scale-to-Y="0"/>'
    b"</style:page-layout></office:automatic-styles><office:master-styles><style:master-page "
    b'style:name="Default" style:page-layout-name="Fit"/></office:master-styles>'
    b"</office:document-styles>")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, ValueError,
               KeyError, NotImplementedError, OSError)


def fit_sheets(path: str) -> bool:
    """Rewrite the XLSX or ODS at `path` in place so its sheets fit the page width; False when
    nothing was changed. Raises render.wire.model.Unreadable for a bomb, a DTD or deep nesting."""
    edit = {".xlsx": _xlsx_changes, ".ods": _ods_changes}.get(os.path.splitext(path)[1])
    if edit is None:
        return False
    rewritten = path + ".fitted"
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
            check_sizes(entries)
            scan_parts(archive, entries)
            changes = edit(archive, entries)
            if not changes:
                return False
            _rewrite(archive, entries, changes, rewritten)
    except _ZIP_ERRORS:
        if os.path.exists(rewritten):
            os.unlink(rewritten)
        return False
    os.replace(rewritten, path)
    return True


def _read(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> bytes | None:
    if entry.file_size > MAX_PART:
        return None
    with archive.open(entry) as member:
        data = member.read(MAX_PART + 1)
    return data if len(data) <= MAX_PART else None


def _xlsx_changes(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo]) -> dict[str, bytes]:
    changes = {}
    for entry in entries:
        if _WORKSHEET.fullmatch(entry.filename):
            xml = _read(archive, entry)
            if xml is not None and (fitted := fit_worksheet(xml)) != xml:
                changes[entry.filename] = fitted
    return changes


def _ods_changes(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo]) -> dict[str, bytes]:
    names = {entry.filename: entry for entry in entries}
    if "styles.xml" in names:
        styles = _read(archive, names["styles.xml"])
        if styles is None or (fitted := fit_page_layouts(styles)) == styles:
            return {}
        return {"styles.xml": fitted}
    manifest = _read(archive, names[_MANIFEST]) if _MANIFEST in names else None
    end = _MANIFEST_END.search(manifest) if manifest is not None else None
    if manifest is None or end is None:
        return {}
    prefix = end.group(1) + b":" if end.group(1) else b""
    listed = (b"<" + prefix + b'file-entry ' + prefix + b'full-path="styles.xml" ' + prefix
              + b'media-type="text/xml"/>')
    return {_MANIFEST: manifest[:end.start()] + listed + manifest[end.start():],
            "styles.xml": _DEFAULT_STYLES}


def _rewrite(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo],
             changes: dict[str, bytes], target: str) -> None:
    """The archive again, entries in their order and compression (an ODS's `mimetype` stays
    first and stored), with `changes` replacing or added after the others."""
    pending = dict(changes)
    with zipfile.ZipFile(target, "w") as out:
        for entry in entries:
            info = zipfile.ZipInfo(entry.filename, max(entry.date_time, _EARLIEST))
            info.compress_type = (zipfile.ZIP_STORED if entry.compress_type == zipfile.ZIP_STORED
                                  else zipfile.ZIP_DEFLATED)
            if entry.filename in pending:
                out.writestr(info, pending.pop(entry.filename))
                continue
            info.file_size = entry.file_size
            with archive.open(entry) as source, out.open(info, "w") as copy:
                while piece := source.read(_PIECE):
                    copy.write(piece)
        for name, data in pending.items():
            out.writestr(zipfile.ZipInfo(name, _EARLIEST), data,
                         compress_type=zipfile.ZIP_DEFLATED)
