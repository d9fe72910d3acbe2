"""The gates' cost criterion in one run: what link gates cost a page of a link without a
policy, against a reference that differs by the gate check alone.

Two vaultd as deployed, fresh and alike, both with `bench/ungated_site` first on their path
(so both load the same code): on the second it patches the authorise stage back to the one
before gates (the link's reads alone: no session read, no gate judged); on the first
(VAULTD_BENCH_KEEP_GATES=1) it changes nothing. The same document goes to both. Three cases,
the same pages, asked for in a rotating order so load elsewhere hits all alike:

- *plain*: a link without a policy, on the vaultd as deployed;
- *reference*: a link without a policy, on the vaultd without the gate check;
- *gated*: a link with a passcode and allowedIps, in a session that passed them (as deployed);
- and, not reported, a second plain link on the reference, so that both servers get as many
  requests (a busier server stays warmer: without it the reference read 10-25 % slower).

For each: page p50, the database commands a page sent (counted by the database, `top`) and CPU
per page of the server and its database. The target: plain over reference (the median of
same-page pairs) at most 1.03, and no extra round trip: at most 0.25 more commands a page (one
a page is what a check of its own would add; fractions are the housekeeping's commands).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from bench.corpus import Document
from bench.gates import gated_link
from bench.latency import p50, sample_pages
from bench.server import VIEWER_IP, Client, Vault, children, cpu_seconds
from tests.db_commands import CommandCounter, sent

UNGATED_SITE = Path(__file__).resolve().parent / "ungated_site"
TARGET = 1.03
MORE_COMMANDS = 0.25  # per page: an extra round trip would be 1.0
PAGE_COLLECTIONS = {"links", "api_keys", "access_log", "files", "accounts", "viewer_sessions",
                    "gate_counters"}
CASES = ("plain", "reference", "gated", "balance")


@dataclass
class Case:
    vault: Vault
    client: Client
    token: str
    counter: CommandCounter
    headers: dict[str, str]
    file_id: str
    times: list[float] = field(default_factory=list)
    commands: int = 0
    cpu: dict[str, float] = field(default_factory=lambda: {"server": 0.0, "database": 0.0})
    database_pid: int = 0

    def page(self, number: int, keep: bool) -> None:
        before_top = self.counter.snapshot()
        before = self._cpu()
        reply = self.client.request("GET", f"/views/{self.token}/pages/{number}",
                                    headers=self.headers)
        after = self._cpu()
        if reply.status != 200:
            raise RuntimeError(f"page {number}: {reply.status} {reply.body[:200]!r}")
        if keep:
            self.times.append(reply.seconds)
            self.commands += sum(sent(before_top, self.counter.snapshot(),
                                      PAGE_COLLECTIONS).values())
            self.cpu["server"] += after[0] - before[0]
            self.cpu["database"] += after[1] - before[1]

    def _cpu(self) -> tuple[float, float]:
        """CPU seconds so far of the server and of its database (counted in 10 ms ticks: only
        sums over many pages mean anything)."""
        if not self.database_pid:
            self.database_pid = next(pid for pid, kind in children(self.vault.pid).items()
                                     if kind == "database")
        return cpu_seconds(self.vault.pid), cpu_seconds(self.database_pid)


@dataclass
class GatesCost:
    cases: dict[str, Case]

    @property
    def paired(self) -> float:
        """The median over same-page pairs of the plain page over the reference page."""
        plain, reference = self.cases["plain"].times, self.cases["reference"].times
        return statistics.median(p / r for p, r in zip(plain, reference, strict=True))

    def per_page(self, case: str) -> tuple[float, float, float]:
        """(commands, server CPU ms, database CPU ms) per page."""
        measured = self.cases[case]
        count = len(measured.times)
        return (measured.commands / count, measured.cpu["server"] / count * 1000,
                measured.cpu["database"] / count * 1000)


def measure(work: Path, doc: Document, wanted: int, rounds: int) -> GatesCost:
    root = Path(__file__).resolve().parent.parent
    deployed, reference = Vault(work / "gates"), Vault(work / "reference")
    for vault in (deployed, reference):  # the same site module in both: the same code loaded
        vault.process.env["PYTHONPATH"] = f"{UNGATED_SITE}:{root}"
    deployed.process.env["VAULTD_BENCH_KEEP_GATES"] = "1"
    vaults: list[Vault] = []
    try:
        for vault in (deployed, reference):
            vaults.append(vault.start())
        cases = {}
        for name, vault in (("plain", deployed), ("reference", reference)):
            client = vault.client()
            stored = vault.store(client, doc.data, "gates " + doc.name)
            cases[name] = Case(vault, client, vault.link(client, stored["id"]),
                               CommandCounter.of(vault.process.data_dir / "db"),
                               {"x-viewer-ip": VIEWER_IP}, stored["id"])
            if name == "plain":
                gated, session = gated_link(client, stored["id"])
                cases["gated"] = Case(vault, vault.client(), gated, cases["plain"].counter,
                                      {"x-viewer-ip": VIEWER_IP, "x-viewer-session": session},
                                      stored["id"])
            else:  # as many requests on each server: a busier one stays warmer (not reported)
                cases["balance"] = Case(vault, vault.client(), vault.link(client, stored["id"]),
                                        cases["reference"].counter, {"x-viewer-ip": VIEWER_IP},
                                        stored["id"])
        _check_switch(cases["plain"], cases["reference"])
        pages = sample_pages(doc.pages, wanted)
        for turn in range(rounds + 1):  # the first round warms the workers' caches: not kept
            for index, number in enumerate(pages):
                shift = (turn + index) % len(CASES)
                for name in CASES[shift:] + CASES[:shift]:
                    cases[name].page(number, keep=turn > 0)
        for case in cases.values():
            case.client.close()
        cases["plain"].counter.close()
        cases["reference"].counter.close()
        return GatesCost(cases)
    finally:
        for vault in vaults:
            vault.stop()


def _check_switch(deployed: Case, reference: Case) -> None:
    """A gated link's page without a session: refused as deployed, served by the reference
    (its gate check is off), or the comparison would mean nothing."""
    answers = []
    for case in (deployed, reference):
        token, _ = gated_link(case.client, case.file_id)
        answers.append(case.client.request("GET", f"/views/{token}/pages/1",
                                           headers={"x-viewer-ip": VIEWER_IP}).status)
    if answers != [403, 200]:
        raise RuntimeError(f"the gate switch did not work: deployed/reference {answers}")


def lines(cost: GatesCost | None) -> list[str]:
    if cost is None:
        return []
    rows = []
    for name, label in (("reference", "without a policy, no gate check (reference)"),
                        ("plain", "without a policy, as deployed"),
                        ("gated", "passcode and allowedIps, in a passed session")):
        commands, server, database = cost.per_page(name)
        rows.append(f"| {label} | {p50(cost.cases[name].times) * 1000:.1f} | {commands:.2f} | "
                    f"{server:.2f} / {database:.2f} |")
    plain, gated = p50(cost.cases["plain"].times), p50(cost.cases["gated"].times)
    return ["### Link gates", "",
            "Two fresh vaultd: one as deployed, one whose authorise stage is the one before "
            "gates (`bench/ungated_site`: the link's reads alone). The same pages of the same "
            "document, the cases asked for in a rotating order, with a second plain link on the "
            "reference so both servers get as many requests (bench/gates_cost.py); commands "
            "counted by the database.", "",
            "| link | page p50 (ms) | database commands per page | CPU per page, server / "
            "database (ms) |", "| --- | --- | --- | --- |", *rows, "",
            f"Plain over reference, median of same-page pairs: {cost.paired:.3f} (target ≤ "
            f"{TARGET:.2f}); gated over plain (p50s): {gated / plain:.3f}; "
            f"{len(cost.cases['plain'].times)} pages each.", ""]


def target_row(cost: GatesCost | None) -> list[list[str]]:
    if cost is None:
        return []
    more = cost.per_page("plain")[0] - cost.per_page("reference")[0]
    # A gate check with its own round trip would add one command a page; what the plain link
    # may show beyond the reference is the housekeeping's time-driven commands (heartbeat,
    # analytics flush, webhook sweep) landing among fewer or more pages.
    ok = cost.paired <= TARGET and more <= MORE_COMMANDS
    return [[f"a link without a policy: page p50 ≤ {TARGET:.2f}× a vaultd without the gate "
             "check, no extra database round trip",
             f"{cost.paired:.3f}×; {more:+.2f} commands per page", "**met**" if ok
             else "**missed**"]]
