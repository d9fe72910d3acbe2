"""The load of the crash test (tests/test_crash_kill.py): clients that upload, create links, view
pages and revoke links against a vaultd that is killed and restarted under them, and a ledger of
what the API acknowledged, to check afterwards that nothing acknowledged was lost.

A request the server did not answer (refused, reset, cut by the kill) acknowledged nothing and is
only counted; the next step goes to wherever the server is now (`url()`; a restart picks a new
port). Every link has a viewer email of its own, which its webhook events carry.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from tests import documents as docs

PACE = 0.05  # between the steps of one client, and after a refused request


@dataclass(frozen=True)
class PageAsked:
    token: str
    sent: float  # time.monotonic() when the request was sent
    status: int


@dataclass
class Ledger:
    """What the API acknowledged, shared by the clients (append-only lists under one lock)."""

    files: list[str] = field(default_factory=list)  # ids answered 201
    links: dict[str, str] = field(default_factory=dict)  # token -> viewer email, answered 201
    revoked: dict[str, float] = field(default_factory=dict)  # token -> when its 204 arrived
    revoking: set[str] = field(default_factory=set)  # DELETE sent: revoked unless unanswered
    pages: list[PageAsked] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # every answer, to find a 500
    unanswered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acknowledged(self) -> int:
        with self.lock:
            return len(self.files) + len(self.links) + len(self.revoked)

    def live_links(self) -> list[str]:
        with self.lock:
            return [token for token in self.links if token not in self.revoked]


class Client:
    """One client's loop of random steps (its own seeded generator)."""

    def __init__(self, url: Callable[[], str], key: str, ledger: Ledger, seed: int,
                 stop: threading.Event) -> None:
        self.url, self.key, self.ledger, self.stop = url, key, ledger, stop
        self.rng = random.Random(seed)
        self.name = f"c{seed}"
        self.made = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with httpx.Client(base_url=f"{self.url()}/v1", timeout=20,
                                  headers={"Authorization": f"Bearer {self.key}"}) as api:
                    while not self.stop.is_set():
                        self.step(api)
                        self.stop.wait(PACE)
            except httpx.HTTPError:  # the server went away: nothing was acknowledged
                with self.ledger.lock:
                    self.ledger.unanswered += 1
                self.stop.wait(PACE)

    def step(self, api: httpx.Client) -> None:
        choice = self.rng.random()
        files, live = list(self.ledger.files), self.ledger.live_links()
        if not files or choice < 0.2:
            self.upload(api)
        elif not live or choice < 0.4:
            self.create_link(api, self.rng.choice(files))
        elif choice < 0.85:
            revoked = list(self.ledger.revoked)
            pick = revoked if revoked and self.rng.random() < 0.2 else live
            self.page(api, self.rng.choice(pick))
        else:
            self.revoke(api, self.rng.choice(live))

    def _answered(self, response: httpx.Response) -> httpx.Response:
        with self.ledger.lock:
            self.ledger.statuses.append(response.status_code)
        return response

    def upload(self, api: httpx.Client) -> None:
        response = self._answered(api.post("/files", content=docs.pdf(pages=2),
                                           headers={"Content-Type": "application/pdf"}))
        if response.status_code == 201:
            with self.ledger.lock:
                self.ledger.files.append(response.json()["id"])

    def create_link(self, api: httpx.Client, file_id: str) -> None:
        self.made += 1
        email = f"{self.name}-{self.made}@example.com"
        response = self._answered(api.post("/views", json={"fileId": file_id,
                                                           "viewerEmail": email}))
        if response.status_code == 201:
            with self.ledger.lock:
                self.ledger.links[response.json()["token"]] = email

    def page(self, api: httpx.Client, token: str) -> None:
        sent = time.monotonic()
        response = self._answered(api.get(f"/views/{token}/pages/{self.rng.choice((1, 2))}"))
        with self.ledger.lock:
            self.ledger.pages.append(PageAsked(token, sent, response.status_code))

    def revoke(self, api: httpx.Client, token: str) -> None:
        # A page first (its link's records are then kept for a second), the revoke, and a
        # page again at once: the kept records must not serve it.
        self.page(api, token)
        with self.ledger.lock:
            self.ledger.revoking.add(token)
        response = self._answered(api.delete(f"/views/{token}"))
        if response.status_code == 204:
            with self.ledger.lock:
                self.ledger.revoked[token] = time.monotonic()
            self.page(api, token)


@dataclass
class Load:
    clients: list[Client]
    stop: threading.Event
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        self.threads = [threading.Thread(target=c.run, daemon=True) for c in self.clients]
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


def start_load(url: Callable[[], str], key: str, ledger: Ledger, seed: int,
               clients: int = 3) -> Load:
    stop = threading.Event()
    return Load([Client(url, key, ledger, seed * 100 + n, stop) for n in range(clients)],
                stop).start()
