"""Logging for vaultd: every line passes through a redacting formatter.

Tokens and keys are credentials. The access log already scrubs request paths; this is the net
under everything else (Tornado's own "malformed message" lines quote header values, tracebacks
quote exception messages): API keys, Bearer values and tokens in viewer or link paths are
replaced before a line is written.
"""

from __future__ import annotations

import logging
import re
import sys

_PATTERNS = [
    (re.compile(r"sd_live_[A-Za-z0-9_\-]*"), "sd_live_<redacted>"),
    (re.compile(r"(?i)(bearer\s+)\S+"), r"\1<redacted>"),
    (re.compile(r"(/(?:v1/views|v)/)[^/\s?#'\"]+"), r"\1<token>"),
]


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
