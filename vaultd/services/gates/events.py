"""What gates leave behind: `verify` and `agreement` access-log entries, and the webhooks
`view.verified` and `agreement.accepted`, each held until its entry is written (as downloads).
A file link's entries are on its file's log; a room link's have no file and carry `roomId`
(the room's log)."""

from __future__ import annotations

import uuid
from typing import Any

from vaultd.db import Db
from vaultd.services.common import access_log, outbox
from vaultd.services.common.outbox import Awaited
from vaultd.services.gates.gated import GatedLink


def _detail(link: GatedLink, detail: dict[str, Any]) -> dict[str, Any]:
    named = {key: value for key, value in link.subject().items() if key not in ("fileId",
                                                                                 "roomId")}
    return {**named, **detail}


async def verify_entry(db: Db, link: GatedLink, step: str, ip: str | None,
                       **extra: Any) -> None:
    """`step`: code-sent, wrong-code, verified, passcode-wrong, passcode (passed)."""
    await access_log.record(db, link.account_id, link.file_id, "verify",
                            viewer_email=link.viewer_email, ip=ip, room_id=link.room_id,
                            detail=_detail(link, {"step": step, **extra}))


async def announce(db: Db, link: GatedLink, event: str, action: Any, ip: str | None,
                   detail: dict[str, Any]) -> None:
    """The entry of `action` and the webhook `event` about it, held until the entry exists."""
    entry_id = str(uuid.uuid4())
    held = await outbox.emit(db, link.account_id, event, {**link.webhook_data(ip), **detail},
                             awaits=Awaited("access_log", {"_id": entry_id}))
    await access_log.record(db, link.account_id, link.file_id, action,
                            viewer_email=link.viewer_email, ip=ip, entry_id=entry_id,
                            room_id=link.room_id, detail=_detail(link, detail))
    await outbox.release(db, held)
