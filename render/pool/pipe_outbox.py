"""The server's end of a worker's task pipe: written by the event loop, never blocking it.

A worker is untrusted: one taken over by a hostile document can ask for document data and never
read the answers. A blocking write to its full pipe would freeze the whole event loop (every
account's pages, /healthz, the task's own timeout timer). So the pipe is non-blocking; what the
kernel does not take at once waits here and is written by the loop's writer callback when the
worker reads. The outbox is bounded: a frame is queued only when nothing is waiting
(`drained()` first), so at most one frame (a task, or one broker answer of at most
`MAX_READ_BYTES`) waits behind the pipe's kernel buffer. A worker that does not drain is never
waited for by anything but its own task, whose deadline kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sys
import termios


class OutboxBusy(Exception):
    """A frame was queued while an earlier one still waits (callers await `drained()`)."""


class Outbox:
    """Frames to one worker, in order, through its non-blocking task pipe."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        os.set_blocking(fd, False)
        self._loop = loop
        self._fd = fd
        self._waiting = bytearray()  # what the pipe has not taken yet
        self._drained: list[asyncio.Future[None]] = []
        self.closed = False

    @property
    def pending(self) -> int:
        """Bytes not yet handed to the kernel."""
        return len(self._waiting)

    def send(self, data: bytes) -> None:
        """Write `data` now as far as the pipe takes it; the rest is written as the worker reads.
        OutboxBusy if an earlier frame still waits; nothing happens once closed (a worker whose
        pipe broke is dying: its exit handler settles its task)."""
        if self.closed:
            return
        if self._waiting:
            raise OutboxBusy("a frame to this worker is still waiting")
        written = self._write(data)
        if written < len(data) and not self.closed:
            self._waiting += memoryview(data)[written:]
            self._loop.add_writer(self._fd, self._on_writable)

    async def drained(self) -> None:
        """Until nothing waits here (or the outbox is closed)."""
        if not self._waiting or self.closed:
            return
        waiter = self._loop.create_future()
        self._drained.append(waiter)
        await waiter

    def unread(self) -> int:
        """Bytes the worker has not read: still here, or in the pipe (FIONREAD on its write end
        counts what the pipe holds). A worker that ends a task with some has skipped an answer."""
        if self.closed:
            return 0
        try:
            held = fcntl.ioctl(self._fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return self.pending
        return self.pending + int.from_bytes(held, sys.byteorder)  # a C int

    def close(self) -> None:
        """Stop writing (before the pipe is closed: the loop must not watch a closed fd) and
        wake whoever waits for the drain; what waits is dropped."""
        if self.closed:
            return
        self.closed = True
        if self._waiting:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_writer(self._fd)
        self._waiting.clear()
        self._wake()

    def _on_writable(self) -> None:
        written = self._write(self._waiting)
        if self.closed:
            return
        del self._waiting[:written]
        if not self._waiting:
            self._loop.remove_writer(self._fd)
            self._wake()

    def _write(self, data: bytes | bytearray) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:  # the worker is gone (EPIPE): nothing more goes to it
            self.close()
            return 0

    def _wake(self) -> None:
        waiters, self._drained = self._drained, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
