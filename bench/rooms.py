"""Data rooms' cost (issue 27): a room of 1,000 files in 50 folders, and a page read through a
room link against the same page through a file link.

    python -m bench.rooms            # 1,000 files, 50 folders (a few minutes on 2 cores)
    python -m bench.rooms --quick    # 100 files, 10 folders (a smoke test)

Targets: the room's index at p50 < 50 ms; a room page's p50 within 5 % of a file page's (both
the same document and page, requested alternately, so both see the same worker cache).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench import corpus
from bench.server import VIEWER_IP, Client, Vault

INDEX_TARGET_MS = 50.0
PAGE_TARGET = 1.05


def build_room(vault: Vault, client: Client, files: int, folders: int) -> tuple[str, list[str]]:
    document = corpus.small_pdf()
    room = client.json("POST", "/rooms", {"name": "Bench room"})["id"]
    folder_ids = [client.json("POST", f"/rooms/{room}/folders", {"name": f"Folder {n + 1}"})["id"]
                  for n in range(folders)]
    file_ids = []
    for number in range(files):
        file_id = vault.store(client, document.data, f"Document {number + 1}.pdf")["id"]
        client.json("POST", f"/rooms/{room}/files",
                    {"fileId": file_id, "folderId": folder_ids[number % folders]})
        file_ids.append(file_id)
    return room, file_ids


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(files: int, folders: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="vaultd-bench-rooms-") as work:
        vault = Vault(Path(work)).start()
        try:
            client = vault.client()
            room, file_ids = build_room(vault, client, files, folders)
            index = [client.request("GET", f"/rooms/{room}/index").seconds
                     for _ in range(rounds)]
            file_token = vault.link(client, file_ids[0])
            room_token = client.json("POST", f"/rooms/{room}/views",
                                     {"viewerEmail": "ann.lee@client.example",
                                      "viewerName": "Ann Lee", "ttlSeconds": 86400})["token"]
            headers = {"x-viewer-ip": VIEWER_IP}
            by_file, by_room = [], []
            for _ in range(rounds * 2):  # alternated: both see the same cache and load
                by_file.append(client.page(file_token, 1).seconds)
                reply = client.request(
                    "GET", f"/room-views/{room_token}/files/{file_ids[0]}/pages/1",
                    headers=headers)
                assert reply.status == 200, reply.body[:200]
                by_room.append(reply.seconds)
        finally:
            vault.stop()
    return {"files": files, "folders": folders, "index_p50_ms": p50_ms(index),
            "file_page_p50_ms": p50_ms(by_file), "room_page_p50_ms": p50_ms(by_room)}


def report(figures: dict[str, float]) -> str:
    ratio = figures["room_page_p50_ms"] / figures["file_page_p50_ms"]
    index_ok = "met" if figures["index_p50_ms"] < INDEX_TARGET_MS else "missed"
    page_ok = "met" if ratio <= PAGE_TARGET else "missed"
    return "\n".join([
        f"# Data rooms: {int(figures['files'])} files in {int(figures['folders'])} folders", "",
        "| measure | p50 | target |", "| --- | --- | --- |",
        f"| `GET /v1/rooms/:id/index` | {figures['index_p50_ms']:.1f} ms | "
        f"< {INDEX_TARGET_MS:.0f} ms ({index_ok}) |",
        f"| page 1 through a file link | {figures['file_page_p50_ms']:.1f} ms | |",
        f"| the same page through a room link | {figures['room_page_p50_ms']:.1f} ms "
        f"({ratio:.3f}×) | ≤ {PAGE_TARGET:.2f}× ({page_ok}) |", ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rooms", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 files in 10 folders")
    args = parser.parse_args(argv)
    files, folders, rounds = (100, 10, 15) if args.quick else (1000, 50, 40)
    print(report(measure(files, folders, rounds)))


if __name__ == "__main__":
    main()
