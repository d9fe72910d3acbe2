"""What gates leave behind: `verify` and `agreement` access-log entries, and the webhooks
`view.verified` and `agreement.accepted`, each held until its entry is written (as downloads)."""

from __future__ import annotations

import uuid
from typing import Any

from vaultd.db import Db
from vaultd.records import LinkDoc
from vaultd.services import access_log, outbox
from vaultd.services.outbox import Awaited
from vaultd.timefmt import iso_utc


async def verify_entry(db: Db, link: LinkDoc, step: str, ip: str | None,
                       **extra: Any) -> None:
    """`step`: code-sent, wrong-code, verified, passcode-wrong, passcode (passed)."""
    await access_log.record(db, link["accountId"], link["fileId"], "verify",
                            viewer_email=link["viewerEmail"], ip=ip,
                            detail={"step": step, "viewId": link["_id"], **extra})


async def announce(db: Db, link: LinkDoc, event: str, action: Any, ip: str | None,
                   detail: dict[str, Any]) -> None:
    """The entry of `action` and the webhook `event` about it, held until the entry exists."""
    entry_id = str(uuid.uuid4())
    data = {"viewId": link["_id"], "fileId": link["fileId"], "viewerEmail": link["viewerEmail"],
            "viewerName": link["viewerName"], "expiresAt": iso_utc(link["expiresAt"]), "ip": ip,
            **detail}
    held = await outbox.emit(db, link["accountId"], event, data,
                             awaits=Awaited("access_log", {"_id": entry_id}))
    await access_log.record(db, link["accountId"], link["fileId"], action,
                            viewer_email=link["viewerEmail"], ip=ip, entry_id=entry_id,
                            detail={"viewId": link["_id"], **detail})
    await outbox.release(db, held)
