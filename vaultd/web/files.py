"""The files API except upload: list, read, download, delete, access log."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from vaultd.emails import normalize_email
from vaultd.errors import InvalidRequest
from vaultd.numbers import is_decimal
from vaultd.services.common import access_log
from vaultd.services.files import deletions, files
from vaultd.services.webhooks import webhook_events
from vaultd.web.attachment import content_disposition
from vaultd.web.base import BaseHandler
from vaultd.web.permissions import CHANGE, READ

# encodeURIComponent leaves these unescaped; clients decode X-File-Name with decodeURIComponent.
URI_COMPONENT_SAFE = "-_.!~*'()"


def parse_bounded_int(raw: str | None, name: str, default: int, low: int, high: int) -> int:
    if raw is None:
        return default
    if not is_decimal(raw) or len(raw) > 9:
        raise InvalidRequest(f"{name} must be an integer between {low} and {high}")
    value = int(raw)
    if not low <= value <= high:
        raise InvalidRequest(f"{name} must be an integer between {low} and {high}")
    return value


def optional_email(value: str | None) -> str | None:
    """A valid email, normalised; anything else is ignored rather than logged."""
    return normalize_email(value) if value else None


class FileListHandler(BaseHandler):
    """GET /v1/files (POST on the same path is `web.upload.UploadHandler`)."""

    shared_route_methods = ("POST",)

    async def get(self) -> None:
        assert self.account is not None
        page = parse_bounded_int(self.get_query_argument("page", None), "page", 1, 1, 10**9)
        per_page = parse_bounded_int(self.get_query_argument("perPage", None), "perPage",
                                     files.PER_PAGE_DEFAULT, 1, files.PER_PAGE_MAX)
        self.send_json(200, await files.list_files(self.ctx.db, self.account.id, page, per_page))


class FileHandler(BaseHandler):
    async def get(self, file_id: str) -> None:
        assert self.account is not None
        doc = await files.get_file(self.ctx.db, self.account.id, file_id)
        self.send_json(200, files.file_json(doc))

    async def delete(self, file_id: str) -> None:
        assert self.account is not None
        await deletions.delete_file(self.ctx.db, self.ctx.store, self.account.id, file_id,
                                    self.ctx.instance_id)
        self.send_empty(204)


class DownloadHandler(BaseHandler):
    db_deadline = False  # waits on other things between its database calls
    paced = False  # its time is the client's reading
    async def get(self, file_id: str) -> None:
        assert self.account is not None
        doc = await files.get_file(self.ctx.db, self.account.id, file_id)
        files.require_downloadable(doc)
        opener = await self.ctx.store.open_plaintext(doc)  # verified before any byte is sent
        email = optional_email(self.request.headers.get("x-viewer-email"))
        await webhook_events.record_download(self.ctx.db, doc, email)
        self.set_header("Content-Type", doc["contentType"])
        self.set_header("Content-Length", str(doc["size"]))
        self.set_header("X-File-Name", quote(doc["name"], safe=URI_COMPONENT_SAFE))
        self.set_header("Content-Disposition", content_disposition(doc["name"]))
        self.set_header("Cache-Control", "private, no-store")
        async for chunk in self.ctx.store.iter_plaintext(doc, opener):
            self.write(chunk)
            await self.flush()
        self.finish()


def parse_before(raw: str | None) -> datetime | None:
    """An ISO 8601 time with a zone (the `at` of an entry), as the cursor to older entries."""
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidRequest("before must be an ISO 8601 time with a zone, such as the at of "
                             "an entry (2026-01-31T12:00:00.000Z)")
    return moment.astimezone(UTC)


def parse_action(raw: str | None) -> str | None:
    if raw is None:
        return None
    if raw not in access_log.ACTIONS:
        raise InvalidRequest(f"action must be one of {', '.join(sorted(access_log.ACTIONS))}")
    return raw


class AccessLogHandler(BaseHandler):
    async def get(self, file_id: str) -> None:
        assert self.account is not None
        before = parse_before(self.get_query_argument("before", None))
        action = parse_action(self.get_query_argument("action", None))
        doc = await files.get_file(self.ctx.db, self.account.id, file_id)
        entries = await access_log.latest_for_file(self.ctx.db, doc["_id"], since=doc["createdAt"],
                                                   before=before, action=action,
                                                   kept_spans=doc.get("logSpans", {}))
        self.send_json(200, entries)


ROUTES = [
    (r"/v1/files", FileListHandler),
    (r"/v1/files/([^/]+)", FileHandler),
    (r"/v1/files/([^/]+)/download", DownloadHandler),
    (r"/v1/files/([^/]+)/access-log", AccessLogHandler),
]

# What each route's methods need, by the rule of `web.permissions` (joined by
# `web.app.route_permissions`).
PERMISSIONS = {
    r"/v1/files": {"GET": READ},
    r"/v1/files/([^/]+)": {"GET": READ, "DELETE": CHANGE},
    r"/v1/files/([^/]+)/download": {"GET": READ},
    r"/v1/files/([^/]+)/access-log": {"GET": READ},
}
