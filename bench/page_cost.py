"""What one page costs the server and the database: CPU per page by process and the database
commands a page sends, counted on the database's side (SecantusDB's `top`: per collection and
kind, with the time it spent on them). Wall-clock latency is not used: on a shared machine it
is noise; CPU seconds and command counts are not.

    python -m bench.page_cost                      # 300 sequential pages of a plain link
    python -m bench.page_cost --env VAULTD_METRICS_PORT=0 --drop-index fileId_1_action_1_at_-1
    python -m bench.page_cost --root /tmp/old-tree # an older checkout of vaultd, same client

Each `--env` is passed to vaultd; each `--drop-index` drops an access-log index after start-up
(what a page's log entry would not have to maintain). `--root` runs another checkout's vaultd
(its C extension built in place) to compare a page's cost before and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient

from bench import corpus
from bench.server import VIEWER_IP, Client, Vault, children, cpu_seconds
from tests.vault_process import VaultProcess, base_env
from vaultd.embedded_db import running_address

WARM_PAGES = 40
IDLE_SECONDS = 2.0


@dataclass
class Cost:
    cpu_ms: dict[str, float]  # per page, by process kind
    commands: dict[str, float]  # per page, by "collection section" (e.g. "links queries")
    command_ms: dict[str, float]  # the database's time on them, per page
    db_ms: float  # database time per page, as the database measured its commands
    requests: float  # wire requests per page (namespaced or not)
    idle_ms: dict[str, float]  # CPU per second with no request, by process kind
    pages: int = 0  # requests measured


class OtherTree(VaultProcess):
    """A vaultd from another checkout (`root`), so an old revision is measured the same way."""

    def __init__(self, data_dir: Path, root: Path, env: dict[str, str]) -> None:
        super().__init__(data_dir, env=env)
        self.root = root

    def start(self, timeout: float = 60.0) -> OtherTree:
        from tests.vault_process import free_port

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cmd = [sys.executable, "-m", "vaultd.main", "--host", "127.0.0.1",
               "--port", str(self.port), "--data-dir", str(self.data_dir)]
        env = base_env({**self.env, "PYTHONPATH": str(self.root)})
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=log,
                                            stderr=subprocess.STDOUT)
        self._wait_healthy(timeout)
        return self


async def _database(uri: str, command: dict[str, Any]) -> Any:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
    try:
        return await client.admin.command(command)
    finally:
        await client.close()


async def _drop_indexes(uri: str, names: list[str]) -> None:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
    try:
        for name in names:
            await client["vaultd"]["access_log"].drop_index(name)
    finally:
        await client.close()


def _counters(uri: str) -> tuple[dict[str, list[int]], int]:
    top = asyncio.run(_database(uri, {"top": 1}))["totals"]
    status = asyncio.run(_database(uri, {"serverStatus": 1}))
    found = {}
    for namespace, sections in top.items():
        if not namespace.startswith("vaultd."):
            continue
        for section in ("queries", "getmore", "insert", "update", "remove", "commands"):
            count = sections[section]["count"]
            if count:
                found[f"{namespace[7:]} {section}"] = [count, sections[section]["time"]]
    return found, int(status["network"]["numRequests"])


def measure(vault: Vault, client: Client, path: str, pages: int, count: int,
            headers: dict[str, str]) -> Cost:
    uri = running_address(vault.process.data_dir / "db")
    assert uri is not None
    for turn in range(WARM_PAGES):
        client.request("GET", f"{path}/{turn % pages + 1}", headers=headers)
    processes = {vault.pid: "server", **children(vault.pid)}
    idle = _idle_cpu(processes)
    top_before, requests_before = _counters(uri)
    cpu_before = {pid: cpu_seconds(pid) for pid in processes}
    for turn in range(count):
        reply = client.request("GET", f"{path}/{turn % pages + 1}", headers=headers)
        if reply.status != 200:
            raise RuntimeError(f"page answered {reply.status}: {reply.body[:200]!r}")
    cpu: dict[str, float] = {}
    for pid, kind in processes.items():
        cpu[kind] = cpu.get(kind, 0.0) + (cpu_seconds(pid) - cpu_before[pid]) / count * 1000
    top_after, requests_after = _counters(uri)
    commands, command_ms = {}, {}
    for key, (calls, spent) in top_after.items():
        before = top_before.get(key, [0, 0])
        if calls - before[0]:
            commands[key] = (calls - before[0]) / count
            command_ms[key] = (spent - before[1]) / count / 1000
    # the two `top` and `serverStatus` calls of each snapshot are not the pages'
    requests = (requests_after - requests_before - 4) / count
    return Cost(cpu, commands, command_ms, sum(command_ms.values()), requests, idle, count)


def _idle_cpu(processes: dict[int, str], seconds: float = IDLE_SECONDS) -> dict[str, float]:
    """CPU milliseconds per second each kind of process spends with no request (timers,
    pollers, the database's own sweeps): a short page run pays it too."""
    before = {pid: cpu_seconds(pid) for pid in processes}
    time.sleep(seconds)  # a measuring window, not a wait for something
    spent: dict[str, float] = {}
    for pid, kind in processes.items():
        spent[kind] = spent.get(kind, 0.0) + (cpu_seconds(pid) - before[pid]) / seconds * 1000
    return spent


def _preload(vault: Vault, client: Client, document: corpus.Document, files: int) -> None:
    """`files` more files, each with a link and 20 pages read: the state a long benchmark run
    leaves (bench.run measures CPU per page after about 50 uploads and 2,000 pages)."""
    for number in range(files):
        stored = vault.store(client, document.data, f"preload {number}.pdf")
        token = vault.link(client, stored["id"])
        for turn in range(20):
            client.page(token, turn % document.pages + 1)


def report(label: str, cost: Cost) -> str:
    lines = [f"## {label}", "",
             "CPU per page: " + ", ".join(f"{kind} {ms:.2f} ms"
                                          for kind, ms in sorted(cost.cpu_ms.items())),
             f"database time per page (its own measure): {cost.db_ms:.2f} ms; "
             f"wire requests per page: {cost.requests:.2f}",
             "CPU at rest, per second: " + ", ".join(f"{kind} {ms:.1f} ms"
                                                      for kind, ms in sorted(cost.idle_ms.items())),
             "",
             "| collection, kind | commands per page | database ms per page |",
             "| --- | --- | --- |"]
    lines += [f"| {key} | {per_page:.2f} | {cost.command_ms[key]:.3f} |"
              for key, per_page in sorted(cost.commands.items())]
    lines.append(f"| all | {sum(cost.commands.values()):.2f} | {cost.db_ms:.3f} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> Cost:
    env = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="vaultd-page-cost-") as work:
        vault = Vault(Path(work))
        if args.root is not None:
            vault.process = OtherTree(Path(work) / "data", args.root, env)
        else:
            vault.process = VaultProcess(Path(work) / "data", env=env)
        vault.start()
        try:
            uri = running_address(vault.process.data_dir / "db")
            assert uri is not None
            if args.drop_index:
                asyncio.run(_drop_indexes(uri, args.drop_index))
            client = vault.client()
            document = corpus.small_pdf()
            _preload(vault, client, document, args.files)
            stored = vault.store(client, document.data, "cost.pdf")
            token = vault.link(client, stored["id"])
            cost = measure(vault, client, f"/views/{token}/pages", document.pages, args.pages,
                           {"x-viewer-ip": VIEWER_IP})
            client.close()
        finally:
            vault.stop()
    return cost


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.page_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300, help="pages measured (after 40 warm)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--drop-index", action="append", default=[], metavar="NAME")
    parser.add_argument("--root", type=Path, default=None, help="another vaultd checkout")
    parser.add_argument("--files", type=int, default=0,
                        help="files uploaded and read (20 pages each) before measuring")
    parser.add_argument("--label", default="page cost")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    cost = run(args)
    print(report(args.label, cost))
    if args.json is not None:
        args.json.write_text(json.dumps(cost.__dict__))


if __name__ == "__main__":
    main()

