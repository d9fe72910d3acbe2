"""`GatedLink`: a link as its gates see it, whatever it shows: a file's view link or a room link.

Every gate (policy check, sessions, codes, passcodes, agreements, counters, entries, webhooks)
takes one of these, so a file link and a room link share one implementation. A room link's
sessions, counters and entries are its own (keyed by the room link's id), never a document's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from vaultd.records import PolicyDoc, RoomDoc, RoomLinkDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.links.links import OpenLink
from vaultd.timefmt import iso_utc

Records = Literal["links", "room_links"]


@dataclass(frozen=True)
class GatedLink:
    id: str  # the link record's id: sessions and counters are kept under it
    records: Records  # its collection (`maxOpens` counts on the record)
    account_id: str
    viewer_email: str
    viewer_name: str
    expires_at: datetime
    policy: PolicyDoc | None
    brand: str  # the account's: the code's mail and the gate screens name only it
    file_id: str | None = None  # a file link's file
    room_id: str | None = None  # a room link's room

    def subject(self) -> dict[str, Any]:
        """What entries and webhooks about this link name: the link and what it shows."""
        if self.room_id is not None:
            return {"roomLinkId": self.id, "roomId": self.room_id}
        return {"viewId": self.id, "fileId": self.file_id}

    def webhook_data(self, ip: str | None) -> dict[str, Any]:
        return {**self.subject(), "viewerEmail": self.viewer_email,
                "viewerName": self.viewer_name, "expiresAt": iso_utc(self.expires_at), "ip": ip}


@dataclass(frozen=True)
class Reader:
    """Who is acting, as the route saw them (logged with what they did)."""

    ip: str | None
    user_agent: str | None = None


def file_link(opened: OpenLink) -> GatedLink:
    link = opened.link
    return GatedLink(link["_id"], "links", link["accountId"], link["viewerEmail"],
                     link["viewerName"], link["expiresAt"], link.get("policy"),
                     opened.account.brand, file_id=link["fileId"])


def room_link(link: RoomLinkDoc, room: RoomDoc, account: Account) -> GatedLink:
    return GatedLink(link["_id"], "room_links", link["accountId"], link["viewerEmail"],
                     link["viewerName"], link["expiresAt"], link.get("policy"), account.brand,
                     room_id=link["roomId"])
