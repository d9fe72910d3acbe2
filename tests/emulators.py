"""What the storage emulators the tests run (Azurite, moto's S3 server) share: the end of
their log for a failure message, and a stop of their whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


def log_tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""


def stop_group(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM to the emulator's session (it saves its state on a clean stop), then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
