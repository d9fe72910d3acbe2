"""A render worker's life, inside its process: warm up, confine, then serve tasks.

Imported (with every rendering library) by the zygote, the multiprocessing fork server that
forks each worker; a fresh worker therefore costs a fork, not an interpreter start. The worker
talks to the server only through two pipes and the messages of `render.wire.channel`; the one
document its current task names is read through the server's broker (READ / DATA messages).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import signal
from multiprocessing.connection import Connection

from PIL import Image

# Every implementation an entry point names, imported here so that the zygote has done all of
# rendering's imports before any worker forks (render.worker.entry_points).
from render.documents.brokered_reads import ReadAt, install_opener
from render.forensic import trace_task  # noqa: F401  (POST /v1/trace decodes in a worker)
from render.office import formats  # noqa: F401  (an Office upload's index)
from render.page import rasterise
from render.sandbox.confine import confine
from render.watermark import date_words, fonts  # noqa: F401  (date_words: a trace's dates)
from render.wire.channel import (
    MAX_READ_BYTES,
    READ_REQUEST,
    Kind,
    frame,
    read_message,
    write_all,
)
from render.wire.model import BrokerError, DocumentSource, WorkerConfig
from render.wire.replies import encode_error, encode_result
from render.worker import late_imports, rendition, tasks  # noqa: F401

_PR_SET_PDEATHSIG = 1


class _Channel:
    def __init__(self, tasks_fd: int, results_fd: int) -> None:
        self.tasks_fd = tasks_fd
        self.results_fd = results_fd

    def opener(self, source: DocumentSource) -> ReadAt:
        # The server serves only the document of the task in progress; no name goes over.
        return self.read_at

    def read_at(self, offset: int, length: int) -> bytes:
        parts = []
        while length > 0:
            size = min(length, MAX_READ_BYTES)
            write_all(self.results_fd, frame(Kind.READ, READ_REQUEST.pack(offset, size)))
            reply = read_message(self.tasks_fd)
            if reply.kind != Kind.DATA or reply.status != 0:
                raise BrokerError("the broker refused the read")
            parts.append(reply.payload)
            offset, length = offset + size, length - size
        return b"".join(parts)


def serve(tasks_end: Connection, results_end: Connection, config: WorkerConfig) -> None:
    """Say READY (with the active sandbox layers), then run tasks until end of input."""
    _die_with_parent()
    channel = _Channel(tasks_end.fileno(), results_end.fileno())
    _close_other_descriptors(channel.tasks_fd, channel.results_fd)
    _warm_up()
    # What the zygote imported lives as long as the worker: out of the collector's full passes,
    # which would otherwise stop a render for tens of ms and, by writing every object's header,
    # copy the zygote's shared pages into this worker's own memory.
    gc.freeze()
    layers = confine(config.memory_limit)
    late_imports.note_confinement()
    _die_with_parent()  # again: the kernel clears the parent-death signal on a uid change
    install_opener(channel.opener)
    write_all(channel.results_fd, frame(Kind.READY, code=int(layers)))
    while True:
        try:
            message = read_message(channel.tasks_fd)
        except (EOFError, OSError):
            return
        if message.kind != Kind.TASK:
            return  # out of step with the server: stop, the server replaces this worker
        try:
            fn, args = pickle.loads(message.payload)
            reply = encode_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - the task's own error goes to the caller
            reply = encode_error(exc)
        write_all(channel.results_fd, reply)


def _warm_up() -> None:
    """Everything that reads files or starts lazily, done before Landlock closes the doors."""
    Image.init()  # every Pillow plugin
    Image.MAX_IMAGE_PIXELS = rasterise.MAX_SOURCE_PIXELS  # Pillow's bomb check agrees with ours
    fonts.font_paths()
    fonts.font_paths(bold=True)


def _close_other_descriptors(*keep: int) -> None:
    # The fork server's own pipes (its alive pipe, the resource tracker's) are of no use here.
    # Nor is vaultd's stderr: a worker taken over could write forged lines into its log. What a
    # worker has to say goes through the channel (errors), or is its exit status (a crash).
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    os.close(null)
    for fd in _open_descriptors():
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_descriptors() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


def _die_with_parent() -> None:
    # The parent is the fork server, which exits when vaultd does: the kernel then kills the
    # worker rather than leaving it rendering for nobody.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:
            os._exit(1)


# In the zygote (which imports this module before forking any worker): once for all workers.
_warm_up()
