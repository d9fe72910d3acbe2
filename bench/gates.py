"""What link gates cost a page: the same pages of one document through a link without a policy
and through a gated one (passcode and allowedIps, read in a session that passed them),
asked for alternately so both see the same machine. The gates are judged from the link record
the page path reads anyway; the session is one more indexed read, made concurrently."""

from __future__ import annotations

import json

from bench.corpus import Document
from bench.latency import sample_pages
from bench.server import VIEWER_IP, Client, Vault

PASSCODE = "bench passcode"


def _gated_link(client: Client, file_id: str) -> tuple[str, str]:
    """(token, session id) of a gated link whose session passed its passcode."""
    body = {"fileId": file_id, "viewerEmail": "ann.lee@client.example", "ttlSeconds": 86400,
            "policy": {"passcode": PASSCODE, "allowedIps": [f"{VIEWER_IP}/24"]}}
    token = str(client.json("POST", "/views", body)["token"])
    opened = client.request("POST", f"/views/{token}/sessions",
                            headers={"x-viewer-ip": VIEWER_IP})
    if opened.status != 201:
        raise RuntimeError(f"opening a session answered {opened.status}")
    session = str(json.loads(opened.body)["sessionId"])
    passed = client.request("POST", f"/views/{token}/sessions/{session}/passcode",
                            json.dumps({"passcode": PASSCODE}).encode(),
                            {"Content-Type": "application/json", "x-viewer-ip": VIEWER_IP})
    if passed.status != 200:
        raise RuntimeError(f"the passcode answered {passed.status}")
    return token, session


def measure(vault: Vault, client: Client, doc: Document, wanted: int,
            rounds: int) -> dict[str, list[float]]:
    """Page times (s) by link kind: "plain" and "gated"; non-200 answers are not counted."""
    stored = vault.store(client, doc.data, "gated " + doc.name)
    plain = vault.link(client, stored["id"])
    gated, session = _gated_link(client, stored["id"])
    headers = {"x-viewer-ip": VIEWER_IP, "x-viewer-session": session}
    times: dict[str, list[float]] = {"plain": [], "gated": []}
    pages = sample_pages(doc.pages, wanted)
    for turn in range(rounds + 1):  # the first round warms the workers' page cache: not kept
        for index, number in enumerate(pages):
            order = ["plain", "gated"] if (turn + index) % 2 == 0 else ["gated", "plain"]
            for kind in order:
                if kind == "plain":
                    reply = client.page(plain, number)
                else:
                    reply = client.request("GET", f"/views/{gated}/pages/{number}",
                                           headers=headers)
                if turn and reply.status == 200:
                    times[kind].append(reply.seconds)
    return times
