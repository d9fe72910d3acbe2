"""The Office formats vaultd converts, by content type, and the first bytes that announce them.

What the server needs of Office documents before a worker has read one: an upload's first bytes
say whether it may be Office at all (`ZIP_MAGIC`; `OLE2_MAGIC`, the legacy formats, refused),
the content types a worker may answer with, and the extension LibreOffice picks its import filter
by. Kept apart from `render.office.formats`, which reads the archive itself, so that the server
loads no parser of untrusted documents (`tests/test_render_layers.py`).
"""

from __future__ import annotations

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
ODP = "application/vnd.oasis.opendocument.presentation"
OFFICE_TYPES = (DOCX, XLSX, PPTX, ODT, ODS, ODP)
EXTENSIONS = {DOCX: "docx", XLSX: "xlsx", PPTX: "pptx", ODT: "odt", ODS: "ods", ODP: "odp"}
ZIP_MAGIC = b"PK\x03\x04"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc, .xls, .ppt
