"""What the server's runner (`render.office.runner`) and the converter's launcher
(`render.office.launch`) agree on: the program the launcher becomes, its exit statuses and the
file it reports its sandbox layers in.

Kept apart from the launcher, which parses the spreadsheet (`fit_width`) once confined, so that
the server loads no parser of untrusted documents (`tests/test_render_layers.py`).
"""

from __future__ import annotations

SOFFICE = "/usr/lib/libreoffice/program/oosplash"  # restarts soffice.bin when a new profile asks
UNCONFINED = 3  # exit status: a layer is missing and the sandbox is required
REFUSED = 4  # exit status: the spreadsheet failed the archive checks (no PDF: a 422)
LAYERS_FILE = "layers"  # the active layers' mask, written before the exec (doctor, tests)
