"""A room's tree: folders and files, numbered from their positions (`1`, `1.2`, `1.2.3`).

A room's items are read whole (one query, at most MAX_ITEMS) and the tree, its numbers and a
link's scope are worked out in memory: every answer about a room is from one consistent read.
A file's item carries the file's name and page count (copied when added: they never change), so
the tree reads no file; deleting a file removes its items (`files.deletions.settle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vaultd.db import Db
from vaultd.records import RoomItemDoc

MAX_ITEMS = 5000  # items of one room; the bench's room has 1,050
MAX_SHOWN_DEPTH = 8  # the hosted index indents this deep at most (viewer.css, .depth-N)


@dataclass(frozen=True)
class FileRef:
    id: str
    name: str
    page_count: int


@dataclass
class Node:
    item: RoomItemDoc
    number: str
    path: str  # names from the top of the room, "/"-joined
    name: str
    file: FileRef | None  # a file item's file; None for folders
    children: list[Node] = field(default_factory=list)


async def load_items(db: Db, room_id: str) -> list[RoomItemDoc]:
    # What the tree uses: not the room, account and time every item also holds.
    shown = {"roomId": 0, "accountId": 0, "createdAt": 0}
    return [doc async for doc in db.room_items.find({"roomId": room_id}, shown).limit(MAX_ITEMS)]


def children_of(items: Iterable[RoomItemDoc]) -> dict[str | None, list[RoomItemDoc]]:
    """Each parent's items, in their order (position, then id: stable under equal positions)."""
    by_parent: dict[str | None, list[RoomItemDoc]] = {}
    for item in items:
        by_parent.setdefault(item["parentId"], []).append(item)
    for siblings in by_parent.values():
        siblings.sort(key=lambda item: (item["position"], item["_id"]))
    return by_parent


def build(items: list[RoomItemDoc]) -> list[Node]:
    """The numbered tree, numbers from positions (dense: 1..n under each parent)."""
    by_parent = children_of(items)

    def grow(parent: str | None, prefix: str, path: str) -> list[Node]:
        nodes: list[Node] = []
        for item in by_parent.get(parent, []):
            file = (FileRef(item["fileId"], item.get("fileName", ""), item.get("pageCount", 1))
                    if item["type"] == "file" and "fileId" in item else None)
            name = item["name"] or (file.name if file else "")
            number = f"{prefix}{len(nodes) + 1}"
            node = Node(item, number, f"{path}{name}", name, file)
            if item["type"] == "folder":
                node.children = grow(item["_id"], f"{number}.", f"{path}{name}/")
            nodes.append(node)
        return nodes

    return grow(None, "", "")


def walk(nodes: Iterable[Node]) -> Iterable[Node]:
    """Every node, depth first, in index order."""
    for node in nodes:
        yield node
        yield from walk(node.children)


def scoped(tree: list[Node], folder_ids: list[str] | None) -> list[Node]:
    """What a link scoped to `folder_ids` sees: those folders (with all they hold, items added
    later included) as its top level; None is the whole room. Numbers stay the room's."""
    if folder_ids is None:
        return tree
    wanted = set(folder_ids)
    roots: list[Node] = []

    def find(nodes: list[Node]) -> None:
        for node in nodes:
            if node.item["_id"] in wanted:
                roots.append(node)  # its content comes with it: no need to look further down
            elif node.children:
                find(node.children)

    find(tree)
    return roots


def node_json(node: Node) -> dict[str, Any]:
    body: dict[str, Any] = {"id": node.item["_id"], "type": node.item["type"],
                            "number": node.number, "name": node.name}
    if node.file is not None:
        body["fileId"] = node.file.id
        body["pageCount"] = node.file.page_count
    else:
        body["children"] = [node_json(child) for child in node.children]
    return body


def tree_json(nodes: list[Node]) -> list[dict[str, Any]]:
    return [node_json(node) for node in nodes]


async def read_tree(db: Db, account_id: str, room_id: str) -> list[Node]:
    return build(await load_items(db, room_id))
