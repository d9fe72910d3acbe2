"""A gated link for the benchmarks (passcode and allowedIps), with a session that passed them:
`bench.gates_cost` measures its pages against links without a policy."""

from __future__ import annotations

import json

from bench.server import VIEWER_IP, Client

PASSCODE = "bench passcode"


def gated_link(client: Client, file_id: str) -> tuple[str, str]:
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
