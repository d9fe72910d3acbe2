"""CPU seconds per test module: a pytest plugin, and a report of what it recorded.

The machine the tests run on is shared, so a module's wall time says more of the others' load
than of the module; its CPU says what it costs. Loaded with `-p tests.cpu_by_module
--cpu-by-module=FILE`, every test process (each xdist worker) appends a JSON line per module to
FILE: the user and system CPU spent from the module's first set-up to its last teardown by the
test process (so by the session's in-process vaultd, whose threads are the test process's) and
by its descendants (render workers, a module's vaultd forked from the zygote, database servers),
live or reaped by one of them. A `vault-admin` command forked from its zygote is reaped by the
kernel (the zygote ignores SIGCHLD): its CPU is not counted. `python -m tests.cpu_by_module
FILE` prints the modules, costliest first, with the total.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-by-module", metavar="FILE", default=None,
                     help="append each module's CPU seconds to FILE (tests/cpu_by_module.py)")


def process_tree_cpu(root: int) -> tuple[float, float]:
    """User and system CPU seconds of `root` and its live descendants, each with what its
    reaped children used."""
    parents: dict[int, int] = {}
    times: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue  # gone since the listing
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(name)] = int(fields[1])
        user, system, children_user, children_system = (int(f) for f in fields[11:15])
        times[int(name)] = (user + children_user, system + children_system)
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    user = sum(times[pid][0] for pid in tree if pid in times)
    system = sum(times[pid][1] for pid in tree if pid in times)
    return user / TICK, system / TICK


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item,
                            nextitem: pytest.Item | None) -> Generator[None, None, None]:
    target = item.config.getoption("cpu_by_module")
    if target is None:
        yield
        return
    module = item.nodeid.split("::")[0]
    started = item.config.stash.get(_STARTED, None)
    if started is None or started[0] != module:
        started = (module, time.monotonic(), *process_tree_cpu(os.getpid()))
        item.config.stash[_STARTED] = started
    yield
    # The module's fixtures are torn down in its last test's teardown, just done.
    if nextitem is None or nextitem.nodeid.split("::")[0] != module:
        user, system = process_tree_cpu(os.getpid())
        line = {"module": module, "user": round(user - started[2], 2),
                "system": round(system - started[3], 2),
                "wall": round(time.monotonic() - started[1], 2),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
        with open(target, "a", encoding="utf-8") as out:  # one short line: one append
            out.write(json.dumps(line) + "\n")
        del item.config.stash[_STARTED]


_STARTED = pytest.StashKey[tuple[str, float, float, float]]()


def report(path: Path) -> str:
    """The modules of a recording, costliest CPU first, and the totals."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows.sort(key=lambda row: row["user"] + row["system"], reverse=True)
    lines = [f"{'cpu s':>8} {'user':>8} {'system':>7} {'wall s':>8}  module"]
    for row in rows:
        lines.append(f"{row['user'] + row['system']:8.1f} {row['user']:8.1f} "
                     f"{row['system']:7.1f} {row['wall']:8.1f}  {row['module']}")
    user = sum(row["user"] for row in rows)
    system = sum(row["system"] for row in rows)
    wall = sum(row["wall"] for row in rows)
    lines.append(f"{user + system:8.1f} {user:8.1f} {system:7.1f} {wall:8.1f}  "
                 f"all {len(rows)} modules")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1])))
