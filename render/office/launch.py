"""The converter's launcher: `python -m render.office.launch JOB_DIR INPUT MEMORY CPU [required]`.

Started by the server (`render.office.runner`) in a process group of its own; it confines
itself (`render.sandbox.converter`), fits a spreadsheet's sheets to the page width
(`render.office.fit_width`) and then becomes LibreOffice, which converts JOB_DIR/INPUT to a PDF
in JOB_DIR/out. It holds no key and no credential: the job directory holds the one
document's plaintext, put there by the server, and nothing else.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

from render.office.fit_width import fit_sheets
from render.office.launcher_protocol import LAYERS_FILE, REFUSED, SOFFICE, UNCONFINED
from render.sandbox.converter import confine_converter
from render.sandbox.layers import ALL_LAYERS, Layer
from render.wire.model import Unreadable

_PR_SET_PDEATHSIG = 1


def soffice_argv(job_dir: str, input_name: str) -> list[str]:
    return [SOFFICE, "--headless", "--invisible", "--norestore", "--nologo", "--nodefault",
            "--nolockcheck", "--nofirststartwizard",
            f"-env:UserInstallation=file://{job_dir}/profile",
            "--convert-to", "pdf", "--outdir", os.path.join(job_dir, "out"),
            os.path.join(job_dir, input_name)]


def clean_environment(job_dir: str) -> dict[str, str]:
    """No variable of the server's: only what LibreOffice needs to run headless."""
    return {"PATH": "/usr/bin:/bin", "HOME": job_dir, "TMPDIR": os.path.join(job_dir, "tmp"),
            "LANG": "C.UTF-8", "SAL_USE_VCLPLUGIN": "svp", "SAL_DISABLE_JAVA": "1"}


def main(argv: list[str]) -> None:
    job_dir, input_name, memory, cpu = argv[0], argv[1], int(argv[2]), int(argv[3])
    required = argv[4:] == ["required"]
    os.environ.clear()
    layers: Layer = confine_converter(job_dir, memory, cpu)
    _die_with_parent()  # after the uid switch, which clears the parent-death signal
    # Written with os calls: Python's own modules are no longer readable from here on.
    fd = os.open(os.path.join(job_dir, LAYERS_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b"%d" % int(layers))
    os.close(fd)
    if required and layers != ALL_LAYERS:
        os._exit(UNCONFINED)  # render.sandbox = "required": LibreOffice never starts
    try:
        fit_sheets(os.path.join(job_dir, input_name))  # untrusted: parsed only once confined
    except Unreadable:
        os._exit(REFUSED)
    os.execve(SOFFICE, soffice_argv(job_dir, input_name), clean_environment(job_dir))


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1:])
