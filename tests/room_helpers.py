"""Small helpers for the rooms tests: a room with folders and files, over HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http_helpers import created

ROOM_NOT_FOUND = "room not found"


def create_room(api: httpx.Client, name: str = "Due diligence") -> dict[str, Any]:
    return created(api.post("/rooms", json={"name": name}))


def add_folder(api: httpx.Client, room_id: str, name: str, parent: str | None = None
               ) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if parent is not None:
        body["parentId"] = parent
    return created(api.post(f"/rooms/{room_id}/folders", json=body))


def add_file(api: httpx.Client, room_id: str, file_id: str, folder: str | None = None
             ) -> dict[str, Any]:
    body: dict[str, Any] = {"fileId": file_id}
    if folder is not None:
        body["folderId"] = folder
    return created(api.post(f"/rooms/{room_id}/files", json=body))


def room_link(api: httpx.Client, room_id: str, email: str = "reader@example.com",
              **fields: Any) -> dict[str, Any]:
    return created(api.post(f"/rooms/{room_id}/views", json={"viewerEmail": email, **fields}))


def numbered(nodes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(number, name) of every node of a tree, in index order."""
    out: list[tuple[str, str]] = []
    for node in nodes:
        out.append((node["number"], node["name"]))
        out += numbered(node.get("children", []))
    return out
