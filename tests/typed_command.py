"""A command line as an operator types it in a shell (`vaultd`'s printed first-admin command):
its leading `NAME=value` words are the environment it runs with, then the tool and its
arguments."""

from __future__ import annotations

import itertools
import shlex


def split_typed(command: str) -> tuple[dict[str, str], str, list[str]]:
    """(environment, tool, arguments) of `command`, split as a POSIX shell splits it."""
    words = shlex.split(command)
    assignments = list(itertools.takewhile(lambda word: "=" in word, words))
    tool, *args = words[len(assignments):]
    return dict(word.split("=", 1) for word in assignments), tool, args
