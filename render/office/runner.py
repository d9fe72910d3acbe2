"""Running one conversion, in the server: a job directory, the confined launcher, its deadline.

The server writes the one document's plaintext into a fresh job directory (mode 0700, with an
empty LibreOffice profile that forbids macros and link updates), starts `render.office.launch`
in a process group of its own, and kills the whole group when the deadline passes. The job
directory, input included, is removed whatever happens. Nothing here knows about HTTP or keys:
the caller passes a function that reads plaintext ranges.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from render.office.launcher_protocol import LAYERS_FILE, SOFFICE, UNCONFINED

JOB_ROOT = "/var/tmp"  # not /tmp: the converter's /tmp is its job's own tmp (a bind mount)
_PIECE = 1 << 20
_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Macros never run (the highest security level, and execution disabled outright) and links
# (Writer and Calc) are never updated on load; the sandbox enforces the same without them.
PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>1</value></prop></item>
</oor:items>
"""  # noqa: E501 - one registry item a line

ReadRange = Callable[[int, int], Awaitable[bytes]]


class ConversionFailed(Exception):
    """The converter gave no PDF: the message names why and is safe to show the client."""


class ConverterUnconfined(Exception):
    """The sandbox is required and the converter could not apply every layer: not run."""


@dataclass(frozen=True)
class Job:
    size: int  # plaintext bytes
    extension: str  # "docx" ...: LibreOffice picks its import filter by it, then by content
    timeout: float
    memory_limit: int
    max_output: int
    required: bool = False  # render.sandbox = "required": refuse to run with a layer missing


def installed() -> bool:
    return os.access(SOFFICE, os.X_OK)


async def convert(job: Job, read: ReadRange) -> tuple[bytes, int]:
    """The PDF and the sandbox layers the converter reported (0: it never got that far)."""
    job_dir = await asyncio.to_thread(_make_job_dir)
    try:
        name = f"document.{job.extension}"
        await _write_input(os.path.join(job_dir, name), job.size, read)
        if await _run(job_dir, name, job) == UNCONFINED and job.required:
            raise ConverterUnconfined("a sandbox layer is missing")
        return await asyncio.to_thread(_collect, job_dir, job.max_output)
    finally:
        await asyncio.to_thread(shutil.rmtree, job_dir, True)


def _make_job_dir() -> str:
    job_dir = tempfile.mkdtemp(prefix="vaultd-convert-", dir=JOB_ROOT)
    for sub in ("out", "tmp", "profile/user"):
        os.makedirs(os.path.join(job_dir, sub))
    with open(os.path.join(job_dir, "profile/user/registrymodifications.xcu"), "w",
              encoding="utf-8") as profile:
        profile.write(PROFILE)
    return job_dir


async def _write_input(path: str, size: int, read: ReadRange) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for offset in range(0, size, _PIECE):
            piece = await read(offset, min(_PIECE, size - offset))
            await asyncio.to_thread(os.write, fd, piece)
    finally:
        os.close(fd)


async def _run(job_dir: str, name: str, job: Job) -> int:
    """The converter's exit status."""
    mode = ["required"] if job.required else []
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "render.office.launch", job_dir, name, str(job.memory_limit),
        str(int(job.timeout) + 5), *mode, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True, cwd=job_dir, env={"PYTHONPATH": _PROJECT})
    try:
        return await asyncio.wait_for(process.wait(), job.timeout)
    except TimeoutError:
        raise ConversionFailed(
            f"the document took longer than {job.timeout:.0f} s to convert") from None
    finally:
        # The whole group: oosplash, soffice.bin and anything they started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def _collect(job_dir: str, max_output: int) -> tuple[bytes, int]:
    layers = 0
    with contextlib.suppress(OSError, ValueError), open(
            os.path.join(job_dir, LAYERS_FILE), "rb") as mask:
        layers = int(mask.read(16) or b"0")
    out = os.path.join(job_dir, "out")
    pdfs = [n for n in os.listdir(out) if n.endswith(".pdf")]
    if not pdfs:
        raise ConversionFailed("the document could not be converted to PDF")
    path = os.path.join(out, pdfs[0])
    if os.path.getsize(path) > max_output:
        raise ConversionFailed("the converted document is too large")
    with open(path, "rb") as pdf:
        return pdf.read(), layers
