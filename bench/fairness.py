"""Fairness: one account's burst of heavy pages against another account's light page.

    python -m bench.fairness            # about 2-4 minutes on the 2-core machine
    python -m bench.fairness --quick    # fewer samples

A vaultd as deployed (default settings). The *victim* account asks for a light page (the
corpus cover) one request at a time, first on an idle server (its idle p50), then while the
*attacker* account keeps `--burst` clients requesting a heavy page (PDFium draws it in about
3 s) back to back, over one link ("one link") and then over 4 links ("one account", each
case with a fresh attacker account). A victim request that gets 503 or 429 backs off briefly
and asks again, as a polite client would: its latency is the time until its page arrives. The
target: the victim's p50 under the burst within 2x its idle p50. With one global
FIFO it is not; with the fair queue (render/pool/scheduler.py) it is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import corpus
from bench.server import Client, Vault
from tests.documents import slow_pdf

TARGET_RATIO = 2.0


@dataclass
class Outcome:
    links: int = 1  # the attacker's links the burst is spread over
    idle_seconds: list[float] = field(default_factory=list)
    burst_seconds: list[float] = field(default_factory=list)
    victim_refusals: int = 0  # 503s the victim got (and retried) during the burst
    attacker_pages: int = 0
    attacker_refusals: int = 0

    @property
    def idle_p50(self) -> float:
        return statistics.median(self.idle_seconds)

    @property
    def burst_p50(self) -> float:
        return statistics.median(self.burst_seconds)

    @property
    def ratio(self) -> float:
        return self.burst_p50 / self.idle_p50


def page_until_served(client: Client, token: str, outcome: Outcome | None = None) -> float:
    started = time.perf_counter()
    while True:
        reply = client.page(token, 1)
        if reply.status == 200:
            return time.perf_counter() - started
        if reply.status not in (429, 503):
            raise RuntimeError(f"victim page: {reply.status} {reply.body[:200]!r}")
        if outcome is not None:
            outcome.victim_refusals += 1
        time.sleep(0.1)


def attacker(vault: Vault, key: str, token: str, stop: threading.Event, outcome: Outcome,
             lock: threading.Lock) -> None:
    client = Client(vault.port, key)
    try:
        while not stop.is_set():
            reply = client.page(token, 1)
            with lock:
                if reply.status == 200:
                    outcome.attacker_pages += 1
                else:
                    outcome.attacker_refusals += 1
            if reply.status != 200:
                time.sleep(0.05)
    finally:
        client.close()


def measure(vault: Vault, samples: int, burst: int, links: int) -> Outcome:
    victim = vault.client()
    light = vault.store(victim, corpus.small_pdf().data, "light.pdf")
    victim_token = vault.link(victim, light["id"])
    _, attacker_key = vault.process.new_account(f"Burst Co {links}", plan="business")
    heavy_client = Client(vault.port, attacker_key)
    heavy = vault.store(heavy_client, slow_pdf(), "heavy.pdf")
    heavy_tokens = [vault.link(heavy_client, heavy["id"]) for _ in range(links)]
    heavy_client.close()

    outcome = Outcome(links)
    page_until_served(victim, victim_token)  # warm the workers and the document cache
    for _ in range(samples):
        outcome.idle_seconds.append(page_until_served(victim, victim_token))
    stop, lock = threading.Event(), threading.Lock()
    threads = [threading.Thread(target=attacker,
                                args=(vault, attacker_key, heavy_tokens[n % links], stop,
                                      outcome, lock))
               for n in range(burst)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # the burst fills the workers and the queue first
    try:
        for _ in range(samples):
            outcome.burst_seconds.append(page_until_served(victim, victim_token, outcome))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        victim.close()
    return outcome


def render(outcome: Outcome, burst: int) -> str:
    verdict = "within" if outcome.ratio <= TARGET_RATIO else "NOT within"
    spread = "one link" if outcome.links == 1 else f"one account, {outcome.links} links"
    return "\n".join([
        f"## Fairness: a burst of heavy pages ({spread}), a light page from another account",
        "",
        f"- victim idle p50: {outcome.idle_p50 * 1000:.0f} ms "
        f"({len(outcome.idle_seconds)} pages)",
        f"- victim p50 under a burst of {burst} clients: {outcome.burst_p50 * 1000:.0f} ms "
        f"(max {max(outcome.burst_seconds) * 1000:.0f} ms, "
        f"{outcome.victim_refusals} refusals retried)",
        f"- ratio: {outcome.ratio:.1f}x, {verdict} the {TARGET_RATIO:.0f}x target",
        f"- attacker: {outcome.attacker_pages} pages served, "
        f"{outcome.attacker_refusals} refused",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--burst", type=int, default=8, help="attacker clients (default 8)")
    parser.add_argument("--links", type=int, nargs="+", default=[1, 4],
                        help="cases: the attacker's links per burst (default 1 4)")
    parser.add_argument("--json", type=Path, default=None, help="also write raw figures here")
    args = parser.parse_args(argv)
    samples = 5 if args.quick else 15
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="vaultd-fairness-") as work:
        vault = Vault(Path(work)).start()
        try:
            for links in args.links:
                outcomes.append(measure(vault, samples, args.burst, links))
                print(render(outcomes[-1], args.burst), flush=True)
        finally:
            vault.stop()
    if args.json:
        figures = [{**asdict(outcome), "idle_p50": outcome.idle_p50,
                    "burst_p50": outcome.burst_p50, "ratio": outcome.ratio}
                   for outcome in outcomes]
        args.json.write_text(json.dumps(figures, indent=1))
    sys.exit(0)


if __name__ == "__main__":
    main()
