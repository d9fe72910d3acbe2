"""The console's Activity page: the account-wide feed, newest first, with who did each thing.

Two feeds, one at a time: the account's actions (members, keys, webhooks, branding, sign-ins:
the activity log) and its files' (uploads, links opened, pages, downloads, revokes, traces:
the access log). Each can be narrowed to one action, and shows `PER_PAGE` entries with a link
to older ones (a cursor), so a page reads what it shows however long the log
(`services.common.feed`; the account's actions by their numbers, all or one action's, as the
API reads them, `services.members.activity`). The export is the API's
(`GET /v1/activity?format=csv`, Business)."""

from __future__ import annotations

from typing import Any, get_args

from vaultd.db import Db
from vaultd.db_deadline import part_deadline
from vaultd.errors import InvalidRequest
from vaultd.records import Action
from vaultd.records.members import ActivityAction
from vaultd.services.common import feed
from vaultd.services.members import activity
from vaultd.timefmt import iso_utc
from vaultd.web.console_page import ConsolePage
from vaultd.web.permissions import READ

PER_PAGE = 50
FEEDS = {"account": ("Account actions", get_args(ActivityAction)),
         "files": ("File actions", get_args(Action))}


class ActivityPage(ConsolePage):
    section = "activity"

    async def get(self) -> None:
        assert self.account is not None
        kind = self.get_query_argument("feed", "account") or "account"
        if kind not in FEEDS:
            raise InvalidRequest("feed must be account or files")
        actions = FEEDS[kind][1]
        action = self.get_query_argument("action", "") or None
        if action is not None and action not in actions:
            raise InvalidRequest(f"action must be one of {', '.join(actions)}")
        raw = self.get_query_argument("after", "") or None
        after = feed.Cursor.decode(raw) if raw else None
        db = self.ctx.db
        with part_deadline(self.ctx.settings.server_db_deadline_seconds):
            if kind == "account":
                found = await _account_actions(db, self.account.id, after, action)
            else:
                found = await feed.log_page(db, self.account.id, per_page=PER_PAGE,
                                            action=action, after=after)
            names = await self._file_names(found.entries) if kind == "files" else {}
        self.page("activity.html", "Activity", feed=kind, feeds=FEEDS, actions=actions,
                  action=action or "", rows=[_row(kind, doc, names) for doc in found.entries],
                  older=found.next.encode() if found.next else None, paged=after is not None,
                  export=self.account.plan.accessLogExport, plan=self.account.plan.name)

    async def _file_names(self, entries: list[dict[str, Any]]) -> dict[str, str]:
        """The names of this page's files: one read of at most `PER_PAGE` ids, of the stored
        ones only, as the file listing shows them: a file being deleted is deleted to its owner
        from its 204 on (its record goes in the background)."""
        ids = sorted({doc["fileId"] for doc in entries if doc.get("fileId")})
        if not ids:
            return {}
        cursor = self.ctx.db.files.find({"_id": {"$in": ids}, "state": "stored"}, {"name": 1})
        return {doc["_id"]: doc["name"] async for doc in cursor}


async def _account_actions(db: Db, account_id: str, after: feed.Cursor | None,
                           action: str | None) -> feed.FeedPage:
    """The account's actions, all of them or one `action`'s: the API's pages by number
    (`activity.page`), whose cost no burst of events moves (the feed's time windows would read
    a whole burst); the cursor names the same entry (its time and id) in the console's form."""
    found = await activity.page(db, account_id, per_page=PER_PAGE, action=action,
                                after=activity.Cursor(after.at, after.id) if after else None)
    following = found.next
    return feed.FeedPage([dict(doc) for doc in found.entries],
                         feed.Cursor(following.at, following.id) if following else None)


def _row(kind: str, doc: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    actor = doc.get("actor") or {}
    if kind == "account":
        what = doc.get("target", "")
        detail = "; ".join(f"{k}={v}" for k, v in sorted((doc.get("detail") or {}).items()))
    else:
        file_id = doc.get("fileId", "")
        what = names.get(file_id, "(deleted file)") if file_id else ""
        viewer = doc.get("viewerEmail", "")
        detail = "; ".join(part for part in (
            f"viewer {viewer}" if viewer else "",
            f"page {doc['page']}" if doc.get("page") else "") if part)
    who = actor.get("label") or ("the viewer" if kind == "files" else "")
    return {"at": iso_utc(doc["at"]), "who": who, "kind": actor.get("kind", ""),
            "action": doc["action"], "what": what, "detail": detail, "ip": doc.get("ip", "")}


ROUTES = [(r"/console/activity", ActivityPage)]

# What each page and form needs, by the rule of `web.permissions` (a page reads, a form changes
# what it names; joined by `web.app.route_permissions`).
PERMISSIONS = {
    r"/console/activity": {"GET": READ},
}
